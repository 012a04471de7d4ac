// Package export is placementd's export document: the whole placement state
// as plain, indented JSON with Placement's own field names, for backups a
// person can read and for moving state between clusters (`placementd
// export`, `placementd import --file`). docs/migration.md describes the
// format. An export of a running upstream Placement (package upstream)
// uses the same document, without the identifiers and times its API does
// not show.
//
// It imports fsm/state (the image it converts from and to) and must not
// import fsm, fsm/image (the persisted formats are fsm's; an export
// document is not one of them), cluster, httpapi or hashicorp/raft: a
// document is plain data, written and read without a node.
package export
