// Package layering holds the test of the import rules the packages' doc.go
// files state: every package has a doc.go saying what it must not import,
// and the rules that keep the layers apart hold (the domain in fsm/...
// knows neither Raft nor HTTP, the API reaches Raft only through the
// cluster, snapshot formats stand without a node, test tools stay out of
// the server). It has no code of its own and imports nothing of
// placementd: it reads the packages with `go list`.
package layering
