// Package snapshot owns the on-disk format of a state image: a one-line
// header naming the format and its version, then the gzip-compressed JSON
// of state.Image. Raft snapshots, `placementd snapshot save/restore` and
// the state digest all use it, so a newer build can read what an older one
// wrote (Read accepts every version up to FormatVersion).
package snapshot
