package front

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
)

// Forming a cluster of several voters at once (serve --bootstrap-expect),
// for nodes that are all given the same flags, such as the pods of a
// Kubernetes StatefulSet: none of them can be told to start the cluster
// alone. Every listed node waits until it has heard from all of them,
// and bootstraps only if none has any Raft state yet; each then writes
// the same configuration (the listed nodes as voters, by the id and Raft
// address they report), which hashicorp/raft documents as safe. A node
// that finds any of them with state joins instead, so a node that lost
// its data dir never starts a second cluster beside the first.

// BootstrapExpected bootstraps a new cluster of the nodes whose API
// addresses are targets (node n among them: its own API address is
// listed) once every one of them answers that it has no Raft state. It
// returns nil as soon as this node has state (it bootstrapped, or another
// node made it a member), or when a listed node has state (a cluster
// exists: the caller joins it). It retries unreachable nodes until ctx
// ends.
func BootstrapExpected(ctx context.Context, n *cluster.Node, targets []string, secret string) error {
	self := false
	for _, t := range targets {
		self = self || t == n.HTTPAddr()
	}
	if !self {
		return fmt.Errorf("bootstrap: this node's API address %s is not among %v", n.HTTPAddr(), targets)
	}
	hc := apiClient(n.APITLS())
	defer hc.CloseIdleConnections()
	for {
		if n.HasState() {
			return nil
		}
		servers, exists, err := surveyFresh(ctx, n, hc, targets, secret)
		switch {
		case exists:
			return nil
		case err == nil:
			if err := n.BootstrapVoters(servers); err != nil {
				return fmt.Errorf("bootstrap: %w", err)
			}
			return nil
		}
		var se *StatusError
		if errors.Is(err, errSameNode) || errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden) {
			return err // retrying will not help
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bootstrap: %w (last: %v)", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// errSameNode: two of the listed addresses reach the same node.
var errSameNode = errors.New("an address is listed twice")

// surveyFresh asks every target for its report. exists: one of them has
// Raft state. Otherwise servers is the configuration of them all, sorted
// by id, or err says which one did not answer.
func surveyFresh(ctx context.Context, n *cluster.Node, hc *http.Client, targets []string, secret string) (servers []raft.Server, exists bool, err error) {
	byID := map[raft.ServerID]raft.Server{}
	for _, t := range targets {
		if t == n.HTTPAddr() {
			byID[raft.ServerID(n.ID())] = raft.Server{ID: raft.ServerID(n.ID()), Address: raft.ServerAddress(n.RaftAddr()), Suffrage: raft.Voter}
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var st cluster.NodeStatus
		e := (&Client{Addr: t, Secret: secret, TLS: n.APITLS(), HTTP: hc}).do(cctx, http.MethodGet, "/_cluster/self?digest=false", nil, &st)
		cancel()
		switch {
		case e != nil:
			err = fmt.Errorf("bootstrap: waiting for %s: %w", t, e)
			continue
		case st.LastLogIndex > 0 || st.Term > 0:
			return nil, true, nil
		case st.ID == "" || st.RaftAddr == "":
			err = fmt.Errorf("bootstrap: %s reports no node id or Raft address", t)
			continue
		}
		byID[raft.ServerID(st.ID)] = raft.Server{ID: raft.ServerID(st.ID), Address: raft.ServerAddress(st.RaftAddr), Suffrage: raft.Voter}
	}
	if err != nil {
		return nil, false, err
	}
	if len(byID) != len(targets) {
		return nil, false, fmt.Errorf("bootstrap: %d addresses name %d distinct nodes: %w", len(targets), len(byID), errSameNode)
	}
	for _, s := range byID {
		servers = append(servers, s)
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	return servers, false, nil
}
