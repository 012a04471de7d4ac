// Package front is the cluster's HTTP front, in front of the Placement
// API on every node: it forwards a request this node cannot answer to
// the leader and relays the answer (forward.go, forward_watch.go),
// serves reads at the level the client asks for (readlevels.go: a
// follower's linearizable reads from its own state after a read index
// from the leader, bounded-staleness and stale reads), says in every
// answer which node, state index and level it comes from, and serves the
// operator API under /_cluster/ (admin.go, import.go, leaderregions.go),
// the probes /healthz and /readyz (probes.go), member tokens between
// nodes (member.go), warm connections to the other voters' APIs and the
// leader preference (background.go, leaderregions.go). It also holds the
// operator API's client (client.go) and what a node does through it:
// join, leave, and the survey that forms a cluster of several voters at
// once (join.go, bootstrap.go).
//
// Why a package of its own, named front: it is the one piece of the
// cluster that speaks HTTP to clients and peers, and a reader of the node
// (package cluster: Raft, proposing, read barriers and read indexes,
// membership, timing, transport) should not have to read past it. The
// front uses the node only through the node's exported methods, whose
// front-only part is documented in cluster/frontapi.go (read index,
// confirmation, since-confirmed, leader changes, progress, peer URL,
// apply timeout); it never reaches into the node's fields.
//
// The front imports cluster (the node) and cluster/backend (the read
// options it hands the API, the errors and the not-applied header). It
// must not import httpapi or anything under it, nor snapshot/export or
// snapshot/upstream: it forwards and describes any API (ReadServer and
// BodyReader are the two optional interfaces it asks of it), knowing
// nothing of Placement's routes. Package cluster must not import it.
package front
