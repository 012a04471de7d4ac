package fsm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/placementd/placementd/fsm/image"
	"github.com/placementd/placementd/fsm/state"
)

// SnapshotVersion is the snapshot file format this build writes; it reads
// every version up to it. A snapshot file is one header line,
// "placementd-snapshot v1", then the body of that version: for v1, the
// gzip-compressed JSON of state.Image (package fsm/image encodes and
// decodes it). Raft snapshots, backups (`placementd snapshot save`) and
// the state digest all use it.
const SnapshotVersion = 1

const snapshotMagic = "placementd-snapshot"

// WriteSnapshot writes img as a snapshot file in the current format.
func WriteSnapshot(w io.Writer, img *state.Image) error {
	if _, err := fmt.Fprintf(w, "%s v%d\n", snapshotMagic, SnapshotVersion); err != nil {
		return err
	}
	return image.WriteBody(w, img)
}

// ReadSnapshot reads a snapshot file written by this or an older build.
func ReadSnapshot(r io.Reader) (*state.Image, error) {
	br := bufio.NewReader(r)
	header, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading header: %w", err)
	}
	version, _, ok := cutHeader(header, snapshotMagic)
	if !ok {
		return nil, fmt.Errorf("snapshot: not a placementd snapshot (header %q)", strings.TrimSpace(header))
	}
	if err := checkVersion("snapshot", version, SnapshotVersion); err != nil {
		return nil, err
	}
	// Every version so far has the v1 body.
	img, err := image.ReadBody(br)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return img, nil
}

// InspectSnapshot reads a snapshot file fully and returns its digest and
// the last log index it covers; an unreadable, truncated or newer file is
// an error.
func InspectSnapshot(data []byte) (digest string, lastIndex uint64, err error) {
	img, err := ReadSnapshot(bytes.NewReader(data))
	if err != nil {
		return "", 0, err
	}
	return image.Digest(img), img.LastIndex, nil
}

// cutHeader reads a header line "MAGIC vN" or "MAGIC vN after".
func cutHeader(line, magic string) (version int, after string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), magic+" v")
	if !ok {
		return 0, "", false
	}
	digits, after, _ := strings.Cut(rest, " ")
	version, err := strconv.Atoi(digits)
	return version, after, err == nil
}

// ClusterSectionVersion is the version of the cluster's section of a Raft
// snapshot this build writes. A Raft snapshot written by package cluster
// is one line, "placementd-cluster v2 " and the cluster's payload (its
// membership table, opaque here: the cluster decodes it by version), then
// a snapshot file. A snapshot file alone (a backup handed to raft.Restore)
// has no section. Version 2 added the members' region and zone labels;
// version 3 the cluster version (ClusterVersion) beside the table, written
// only once every member reads it.
const ClusterSectionVersion = 3

const clusterSectionMagic = "placementd-cluster"

// WriteClusterSection writes the cluster's section in the given version
// (the newest its cluster's members all read, at most
// ClusterSectionVersion); the snapshot file follows it. The payload is
// one line: it must not hold a newline.
func WriteClusterSection(w io.Writer, version int, payload []byte) error {
	if bytes.IndexByte(payload, '\n') >= 0 {
		return fmt.Errorf("cluster snapshot section: the payload holds a newline")
	}
	if err := checkVersion("cluster snapshot section", version, ClusterSectionVersion); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s v%d %s\n", clusterSectionMagic, version, payload)
	return err
}

// ReadClusterSection reads the cluster's section at the head of a Raft
// snapshot, if there is one (version 0 and payload nil otherwise), and
// returns the reader of the snapshot file after it.
func ReadClusterSection(r io.Reader) (version int, payload []byte, rest io.Reader, err error) {
	br := bufio.NewReader(r)
	prefix := clusterSectionMagic + " v"
	if head, _ := br.Peek(len(prefix)); string(head) != prefix {
		return 0, nil, br, nil
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return 0, nil, nil, fmt.Errorf("cluster snapshot section: %w", err)
	}
	version, after, ok := cutHeader(line, clusterSectionMagic)
	if !ok {
		return 0, nil, nil, fmt.Errorf("cluster snapshot section: header %q", strings.TrimSpace(line[:min(len(line), 40)]))
	}
	if err := checkVersion("cluster snapshot section", version, ClusterSectionVersion); err != nil {
		return 0, nil, nil, err
	}
	return version, []byte(after), br, nil
}
