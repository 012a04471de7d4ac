package front

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/placementd/placementd/cluster"
)

// Joining and leaving a cluster through the operator API of its members
// (serve --join, --leave-on-shutdown).

// JoinCluster announces node n to the cluster through any of targets
// (API addresses of members) until one accepts or ctx ends. Joining is
// idempotent, so a restarting member announces itself again (its API
// address may have changed).
func JoinCluster(ctx context.Context, n *cluster.Node, targets []string, secret string, nonVoter bool) error {
	req := n.JoinRequest(nonVoter)
	hc := apiClient(n.APITLS())
	defer hc.CloseIdleConnections()
	var last error
	for {
		for _, t := range targets {
			if t == n.HTTPAddr() {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			err := (&Client{Addr: t, Secret: secret, TLS: n.APITLS(), HTTP: hc}).Join(cctx, req)
			cancel()
			if err == nil {
				return nil
			}
			last = fmt.Errorf("joining through %s: %w", t, err)
			var se *StatusError
			if errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden ||
				se.Code == http.StatusConflict && (strings.Contains(se.Detail, cluster.ErrBuildTooOld.Error()) || strings.Contains(se.Detail, cluster.ErrWrongNextSecret.Error()))) {
				return last // retrying will not help
			}
		}
		if last == nil {
			return errors.New("join: no address to join through")
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(time.Second):
		}
	}
}

// Leave removes node n from the cluster (a voluntary leave): a leader
// hands leadership over first, then the leader removes n. The last voter
// does not leave: there would be no cluster left.
func Leave(ctx context.Context, n *cluster.Node, secret string) error {
	if !n.IsMember() || n.Alone() {
		return nil
	}
	members, err := n.Members()
	if err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	voter, voters := false, 0
	for _, m := range members {
		if m.Voter {
			voters++
			voter = voter || m.ID == n.ID()
		}
	}
	if voters == 1 && voter {
		return nil
	}
	hc := apiClient(n.APITLS())
	defer hc.CloseIdleConnections()
	if voter {
		if err := leaveKeepsQuorum(ctx, n, members, hc, secret); err != nil {
			return err
		}
	}
	if n.IsLeader() {
		if err := n.TransferLeadership(); err != nil {
			return fmt.Errorf("leave: transferring leadership: %w", err)
		}
	}
	var last error
	for {
		if id, addr := n.Leader(); id != "" && id != n.ID() && addr != "" {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			last = (&Client{Addr: addr, Secret: secret, TLS: n.APITLS(), HTTP: hc}).Remove(cctx, n.ID())
			cancel()
			var se *StatusError
			if last == nil || (errors.As(last, &se) && se.Code == http.StatusNotFound) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("leave: %w", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ErrLeaveLosesQuorum: a voter did not leave because the other voters that
// are healthy would not be a quorum of the configuration without it.
var ErrLeaveLosesQuorum = errors.New("leaving would lose the quorum")

// leaveKeepsQuorum checks that the other voters, asked now, are healthy
// enough to commit this node's removal and to go on without it. Removing
// a voter while another is down leaves a configuration whose quorum needs
// the dead one: the cluster then stops until it returns, and this node's
// return would not help, as it is no longer a member. Staying a member
// (down, while stopped) keeps that quorum reachable.
func leaveKeepsQuorum(ctx context.Context, n *cluster.Node, members []cluster.Member, hc *http.Client, secret string) error {
	leader, _ := n.Leader()
	var others []cluster.Member
	for _, m := range members {
		if m.Voter && m.ID != n.ID() {
			others = append(others, m)
		}
	}
	healthy := make([]bool, len(others))
	var wg sync.WaitGroup
	for i, m := range others {
		if m.HTTPAddr == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			var st cluster.NodeStatus
			c := &Client{Addr: m.HTTPAddr, Secret: secret, TLS: n.APITLS(), HTTP: hc}
			healthy[i] = c.do(cctx, http.MethodGet, "/_cluster/self?digest=false", nil, &st) == nil && st.Follows(leader)
		}()
	}
	wg.Wait()
	var up []string
	for i, ok := range healthy {
		if ok {
			up = append(up, others[i].ID)
		}
	}
	if need := len(others)/2 + 1; len(up) < need {
		return fmt.Errorf("%w: %d of the %d other voters are healthy (%v), %d needed", ErrLeaveLosesQuorum, len(up), len(others), up, need)
	}
	return nil
}

// KeepReported makes sure the leader's table holds n's report of its
// build (cluster.Node.ReportDue): while it does not, n announces itself
// to the leader again, at most every reportAgain (a leader of 0.9.0 takes
// each join, drops the report and logs the join). It returns when ctx
// ends.
func KeepReported(ctx context.Context, n *cluster.Node, secret string) {
	if secret == "" {
		return
	}
	hc := apiClient(n.APITLS())
	defer hc.CloseIdleConnections()
	var sent time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		req, due := n.ReportDue()
		if !due || time.Since(sent) < reportAgain {
			continue
		}
		id, addr := n.Leader()
		if id == "" || addr == "" {
			continue
		}
		sent = time.Now()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		// A failure is tried again after reportAgain.
		_ = (&Client{Addr: addr, Secret: secret, TLS: n.APITLS(), HTTP: hc}).Join(cctx, req)
		cancel()
	}
}

// reportAgain is how long KeepReported waits before announcing a node
// again to a leader that did not keep its report.
const reportAgain = 3 * time.Second
