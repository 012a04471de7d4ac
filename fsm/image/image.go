package image

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/placementd/placementd/fsm/state"
)

// WriteBody writes img as the body of a snapshot file (format v1, after
// the header fsm.WriteSnapshot writes): the gzip-compressed JSON of the
// image.
func WriteBody(w io.Writer, img *state.Image) error {
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

// ReadBody reads a body written by WriteBody, to its end.
func ReadBody(r io.Reader) (*state.Image, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	img, err := decodeImage(zr)
	if err != nil {
		return nil, fmt.Errorf("decoding state: %w", err)
	}
	// Read to the end so gzip checks its CRC and length: a file cut just
	// after the JSON would otherwise pass.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, err
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
