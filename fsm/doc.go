// Package fsm owns everything placementd persists, and is the thin
// adapter between Raft and the placement state in fsm/state: it encodes
// commands into log entries, decodes and applies them in order, and takes
// and restores snapshots.
//
// # Formats
//
// Every persisted format is defined here (the snapshot body's codec in
// fsm/image, a package of fsm's), each with its version, and every
// reader checks the version in one place (version.go): data in a
// version newer than this build's is refused with a VersionError saying
// so ("log entry format v4 was written by a newer placementd: this build
// reads up to v3; upgrade it"), never misread. A build reads every
// version up to its own.
//
//   - Log entries (envelope.go, EntryVersion): JSON
//     {"v":1,"k":kind,"t":time,"p":payload}, the payload the command's
//     JSON; the kinds and the command each names are one table
//     (commands.go), checked against fsm/state's commands. The
//     proposing node fills in the time; Apply never reads a clock. A batch entry (version 2, written by the cluster's group
//     commit) is {"v":2,"k":"batch","p":[entry,entry,...]}: two or more
//     single-command entries, each with its own time, applied in order as
//     if they were consecutive entries, with one Result each. Version 3
//     marks the commands an older build would apply differently (see
//     EntryVersion); every other command is still written as version 1,
//     which older builds read. Version 4 is the cluster metadata entry
//     that raises the cluster version (below). Entries are
//     written byte for byte as encoding/json writes them (with
//     goccy/go-json, for speed). Every field of a command, and of the
//     records in it, is stored under the name its json tag gives.
//   - Cluster metadata entries (envelope.go): "\x00placementd-cluster "
//     then a payload that belongs to package cluster (its membership
//     table, node id to API address). Their meaning is the cluster's, and
//     fsm does not import cluster: fsm frames the entries and tells them
//     from placement entries (ClusterEntry), the cluster decodes the
//     payload and refuses what it does not understand. The framing is the
//     one every build has written, so that old logs and old followers
//     read it unchanged. testdata/golden/cluster-entries.json holds them
//     as written (package cluster replays it).
//   - The cluster version (formats.go): Formats are the newest versions
//     of these formats a build reads (BuildFormats; PreviousReleaseFormats
//     for 0.9.0, whose members report none). The cluster writes a format
//     only once every member reads it, and records what they all read in
//     a cluster metadata entry of log entry format v4
//     (ClusterVersionEntry) and in its snapshot section v3.
//   - Snapshot files (snapshotfile.go, SnapshotVersion): a header line
//     "placementd-snapshot v1", then the body of that version (for v1 the
//     gzip-compressed JSON of state.Image, which fsm/image encodes and
//     decodes). Raft snapshots, backups and the state digest use it.
//   - Raft snapshots written by package cluster: the cluster's section, a
//     line "placementd-cluster vN " with its payload (N up to
//     ClusterSectionVersion, the newest the cluster version allows; the
//     cluster decodes the payload by the version ReadClusterSection
//     returns), then a snapshot file. A backup given to raft.Restore has
//     no section.
//
// testdata/golden holds log entries of every command kind (alone and in
// batches) and snapshots as builds wrote them, with the results and
// digests they gave; the tests replay them on every run, so a change in
// how an old entry decodes or applies, or an old snapshot loads, fails.
// They are written once (go test ./fsm -run TestWriteGolden
// -update-golden writes only missing files) and never rewritten: a change
// of format is a new version, old versions keep being read as they were.
//
// # Versions of the state
//
// The FSM holds the current version of the state (a state.Store that never
// changes once published). Apply builds the next version from it, all the
// entry's commands at once, and swaps it in with an atomic pointer store.
// Readers (Read, Version) take a version without any lock and may keep it
// as long as they need: a long read holds up no write, and sees one
// consistent state throughout. Snapshot only takes the current version;
// Persist serialises it while later entries are applied. An entry that
// cannot be decoded stops the node (panic) rather than let replicas
// diverge.
//
// fsm imports fsm/state, fsm/image (the snapshot body's codec) and
// hashicorp/raft's FSM interface; never cluster, httpapi, snapshot/...
// (the migration tools, which read and write export documents, not
// persisted formats) or Raft's stores and transport.
package fsm
