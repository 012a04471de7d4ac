package snapshot

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/placementd/placementd/fsm/state"
)

// FormatVersion is the snapshot format this build writes.
const FormatVersion = 1

const magic = "placementd-snapshot"

// Write writes img in the current format.
func Write(w io.Writer, img *state.Image) error {
	if _, err := fmt.Fprintf(w, "%s v%d\n", magic, FormatVersion); err != nil {
		return err
	}
	// Fastest compression: the JSON of a large state is hundreds of MB and
	// the default level costs several times the encoding itself, while it
	// compresses well (about 20 bytes per consumer) at any level.
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if err := encodeImage(zw, img); err != nil {
		return err
	}
	return zw.Close()
}

// Read reads an image written by Write of this or an older version.
func Read(r io.Reader) (*state.Image, error) {
	br := bufio.NewReader(r)
	header, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("snapshot: reading header: %w", err)
	}
	var version int
	if _, err := fmt.Sscanf(strings.TrimSpace(header), magic+" v%d", &version); err != nil {
		return nil, fmt.Errorf("snapshot: not a placementd snapshot (header %q)", strings.TrimSpace(header))
	}
	if version < 1 || version > FormatVersion {
		return nil, fmt.Errorf("snapshot: format v%d is newer than this build understands (v%d)", version, FormatVersion)
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	img, err := decodeImage(zr)
	if err != nil {
		return nil, fmt.Errorf("snapshot: decoding state: %w", err)
	}
	// Read to the end so gzip checks its CRC and length: a file cut just
	// after the JSON would otherwise pass.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return img, nil
}

// Digest is the SHA-256 of the image's canonical JSON without its Raft
// log index, in hex: the digest of the placement state alone. Replicas
// holding the same state report the same digest, and every command that
// shows one (cluster status, snapshot inspect, import, export's check)
// shows this one; where the index matters it is shown beside it
// (digest@index).
func Digest(img *state.Image) string {
	h := sha256.New()
	content := *img
	content.LastIndex = 0
	// Encoding a plain struct with sorted slices is deterministic.
	if err := encodeImage(h, &content); err != nil {
		panic(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
