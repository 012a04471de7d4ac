package cluster

import (
	"errors"
	"fmt"
)

// Rotating the cluster secret without downtime. The secret keys Raft's
// TLS (raftsecret.go), joins and the operator API (Bearer), and member
// tokens (forwarding, read indexes). A node may be given a next secret
// beside it, which it accepts everywhere the current one is checked
// (peers' Raft certificates of either CA, either Bearer, tokens under
// either key) while it still presents and sends the current one. The
// rotation is three rolling restarts (docs/operators-guide.md, "Rotating
// the cluster secret"): every node gets next=NEW; then every node gets
// current=NEW, next=OLD; then every node drops next. At every step each
// pair of members accepts what the other presents.
//
// A mistyped next secret would show only at the second step, when the
// nodes given it start presenting it. So a joining (or restarting) node
// sends the ids of its secrets (SecretID: public), and the leader refuses
// one whose next secret is neither of its own while it has a next secret
// itself: the operator is rolling a next secret, and this node got
// another one.

// ErrWrongNextSecret: a node's next secret is not the one the leader holds.
var ErrWrongNextSecret = errors.New("this node's next cluster secret is not the cluster's")

// checkJoinSecrets refuses a node whose next secret differs from both of
// the leader's secrets while the leader holds a next secret.
func (n *Node) checkJoinSecrets(req JoinRequest) error {
	mine := n.cfg.SecretIDs
	if len(mine) < 2 || len(req.SecretIDs) < 2 {
		return nil
	}
	next := req.SecretIDs[1]
	if next == mine[0] || next == mine[1] {
		return nil
	}
	return fmt.Errorf("%w: %s was given a --cluster-secret-next (id %s) that is neither of the leader's secrets (ids %s, %s): "+
		"give %s the same --cluster-secret-next as the other members, or none (docs/operators-guide.md, Rotating the cluster secret)",
		ErrWrongNextSecret, req.ID, next, mine[0], mine[1], req.ID)
}
