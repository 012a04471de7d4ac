// Package cluster owns the Raft node: its log and stable stores
// (raft-boltdb/v2), snapshot store and transport, bootstrapping a fresh
// data directory as a single-node cluster, proposing commands, and the read
// barrier that makes reads linearizable.
//
// Writes: Apply encodes a command with the proposer's clock and waits for
// its result. Errors are sorted into two kinds a client must be able to
// tell apart: ErrNotLeader (the command was certainly not appended) and
// ErrUnknownOutcome (it may still commit; the client should retry with the
// same generations, which makes a retry safe); both are defined in
// cluster/backend, which the API imports instead of the node. Commands proposed while
// an entry of this node's is in flight wait and go out together as one
// batch entry (group commit, propose.go): each still gets its own result,
// and a failed entry fails every command in it with the same error.
//
// Reads: ReadBarrier confirms leadership after noting the commit index,
// counting only acknowledgements of heartbeats sent after the read began
// (readacks.go: raft's VerifyLeader also counts replies to requests sent
// before, which lets a leader woken from a freeze confirm itself), and
// waits until the FSM has applied that index. The first read of a new
// term waits for a Barrier through the log, because hashicorp/raft does
// not say when the new term's first entry committed. Read returns the
// state version to read from as fresh as its backend.ReadOptions say:
// after the barrier (linearizable), at once (stale, or a state the caller
// confirmed), or while the newest confirmation is within a bound. The
// HTTP front (cluster/front) chooses the options for each request:
// linearizable reads on a follower from its own state after a read index
// from the leader (ReadIndex, Confirm; readindex.go), bounded-staleness
// reads while its newest confirmation with the leader is within the bound
// (SinceConfirmed), stale reads as they are.
//
// Timing (timing.go): the Raft timeouts, set directly or as a multiplier
// and checked against each other. Topology (topology.go): region and zone
// labels carried with the membership, the check that losing one region
// keeps a quorum, and leadership transfer, which the front's leader
// preference uses.
//
// Raft transport (transport.go): TCP, optionally mutual TLS from
// certificate files or derived from the cluster secret (raftsecret.go:
// every node derives the same CA from the secret and signs a certificate
// of its own with it). The listener (raftlisten.go) hands raft an inbound
// connection only after the TLS handshake and its first byte, each within
// a deadline, under caps on pending and open connections and on the
// connections from one source address (RaftConnLimits). Whether a node
// may run without Raft authentication is the command's decision, not
// this package's: in-process test clusters run plain TCP.
//
// Membership (meta.go): the members' API addresses and labels are a table
// kept through the Raft log and in Raft snapshots beside the placement
// state. Its meaning (set and delete of a member's entry) is this package's;
// its framing on disk is package fsm's, which owns every persisted format:
// the entries go through fsm.EncodeClusterEntry and fsm.ClusterEntry, the
// table in a snapshot through fsm.WriteClusterSection and
// fsm.ReadClusterSection. The cluster version (clusterversion.go): every
// member reports its build and the formats it reads, and the leader writes
// a format only once every member reads it, raising the version by a log
// entry. A restore from a backup (`placementd snapshot
// restore`) is seeded into a data directory by SeedRestore and installed
// by the node's first start.
//
// The node's HTTP (forwarding to the leader, read levels, the operator
// API and its client, probes, join and leave) is package cluster/front,
// which uses the node through its exported methods; those only the front
// needs are in frontapi.go. The node's status (status.go) is what the
// operator API reports.
//
// cluster imports fsm (the FSM it drives and the formats it frames its
// metadata in), fsm/state (commands and reads) and cluster/backend; it
// must not import cluster/front (the front sits on the node, never the
// reverse), nor httpapi or any package under it: the Placement API sits on
// top of the cluster (httpapi.Backend, served by Node.Apply and Node.Read).
package cluster
