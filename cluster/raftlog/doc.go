// Package raftlog sends hashicorp/raft's log (an hclog.Logger) to a
// log/slog logger, so Raft events come out in placementd's format (text or
// JSON) with the rest of its logs.
//
// It imports nothing of placementd (hclog and log/slog only), so that
// every command and test may use it.
package raftlog
