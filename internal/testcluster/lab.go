package testcluster

import (
	"net/http"
	"path/filepath"

	"github.com/placementd/placementd/internal/wanlab"
)

// LabNode is a node run inside host h of a WAN lab (internal/wanlab),
// listening on the host's address (API :8778, Raft :8779), with its data
// dir and log under dir. Its API is reached with hc, a client of another
// lab host (one without delay, for control traffic).
func LabNode(h *wanlab.Host, id, bin, dir, secret string, hc *http.Client, args ...string) *Proc {
	return &Proc{
		ID: id, Bin: bin, HTTPAddr: h.Addr.String() + ":8778", RaftAddr: h.Addr.String() + ":8779",
		DataDir: filepath.Join(dir, id), Secret: secret, LogPath: filepath.Join(dir, id+".log"),
		Exec: h.Exec(), HTTP: hc, Args: args,
	}
}
