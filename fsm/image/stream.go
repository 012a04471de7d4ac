package image

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/placementd/placementd/fsm/state"
)

// encodeImage writes exactly what json.NewEncoder(w).Encode(img) writes,
// but one provider or consumer at a time. encoding/json renders a whole
// value in memory before writing it, which for a million consumers is a
// second copy of the state, as JSON, on top of the image.
func encodeImage(w io.Writer, img *state.Image) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	field := func(first bool, name string, v any) error {
		if !first {
			bw.WriteByte(',')
		}
		bw.WriteString(`"` + name + `":`)
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = bw.Write(b)
		return err
	}
	bw.WriteByte('{')
	for i, f := range []struct {
		name string
		v    any
	}{
		{"LastIndex", img.LastIndex}, {"NextProviderID", img.NextProviderID},
		{"NextClassID", img.NextClassID}, {"NextConsumerTypeID", img.NextConsumerTypeID},
	} {
		if err := field(i == 0, f.name, f.v); err != nil {
			return err
		}
	}
	if err := encodeArray(bw, "Providers", img.Providers); err != nil {
		return err
	}
	if err := encodeArray(bw, "CustomClasses", img.CustomClasses); err != nil {
		return err
	}
	if err := encodeArray(bw, "CustomTraits", img.CustomTraits); err != nil {
		return err
	}
	if err := encodeArray(bw, "ConsumerTypes", img.ConsumerTypes); err != nil {
		return err
	}
	if err := encodeArray(bw, "Consumers", img.Consumers); err != nil {
		return err
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// encodeArray writes ,"name":[...] element by element (null for a nil
// slice, as encoding/json writes it).
func encodeArray[T any](bw *bufio.Writer, name string, items []T) error {
	bw.WriteString(`,"` + name + `":`)
	if items == nil {
		_, err := bw.WriteString("null")
		return err
	}
	bw.WriteByte('[')
	for i := range items {
		if i > 0 {
			bw.WriteByte(',')
		}
		b, err := json.Marshal(&items[i])
		if err != nil {
			return err
		}
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	_, err := bw.WriteString("]")
	return err
}

// decodeImage reads one JSON image as json.Decoder.Decode would, keys
// matched without regard to case and unknown keys skipped, but decodes
// providers and consumers one at a time, so that only one element's JSON
// is held at once rather than the whole document.
func decodeImage(r io.Reader) (*state.Image, error) {
	var under io.Reader = bufio.NewReaderSize(r, 64<<10)
	dec := json.NewDecoder(under)
	var img state.Image
	var elements decoder
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		switch {
		case strings.EqualFold(key, "Providers"):
			img.Providers, dec, under, err = decodeElements(dec, under, elements.provider)
		case strings.EqualFold(key, "CustomClasses"):
			img.CustomClasses, err = decodeArray[state.ResourceClass](dec)
		case strings.EqualFold(key, "CustomTraits"):
			img.CustomTraits, err = decodeArray[state.Trait](dec)
		case strings.EqualFold(key, "ConsumerTypes"):
			img.ConsumerTypes, err = decodeArray[state.ConsumerType](dec)
		case strings.EqualFold(key, "Consumers"):
			img.Consumers, dec, under, err = decodeElements(dec, under, elements.consumer)
		case strings.EqualFold(key, "LastIndex"):
			err = dec.Decode(&img.LastIndex)
		case strings.EqualFold(key, "NextProviderID"):
			err = dec.Decode(&img.NextProviderID)
		case strings.EqualFold(key, "NextClassID"):
			err = dec.Decode(&img.NextClassID)
		case strings.EqualFold(key, "NextConsumerTypeID"):
			err = dec.Decode(&img.NextConsumerTypeID)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	return &img, nil
}

// decodeElements reads the array (or null) that dec is at, the Providers
// or the Consumers: they are nearly all of a large state, and json.Decoder
// scans each value twice and decodes it by reflection. So the array is
// delimited here, byte by byte from what dec buffered and the rest of
// under (the reader dec reads from), and each element goes to decode. It
// returns a decoder for the rest of the image, as if the image's object
// started again where the array ended, and the reader under it.
func decodeElements[T any](dec *json.Decoder, under io.Reader, decode func([]byte) (T, error)) ([]T, *json.Decoder, io.Reader, error) {
	if !dec.More() { // not at a value: let the decoder report it
		_, err := dec.Token()
		return nil, dec, under, errOr(err, "want an array")
	}
	src := bufio.NewReaderSize(io.MultiReader(dec.Buffered(), under), 64<<10)
	rest := func() (*json.Decoder, io.Reader, error) {
		// What follows the array is "," and more keys, or "}": the rest
		// of the object, which a fresh decoder reads after a "{".
		c, err := skipSpaces(src)
		if err != nil {
			return nil, nil, err
		}
		switch c {
		case ',':
		case '}':
			src.UnreadByte()
		default:
			return nil, nil, fmt.Errorf("invalid character %q after object key:value pair", c)
		}
		next := json.NewDecoder(io.MultiReader(strings.NewReader("{"), src))
		_, err = next.Token()
		return next, src, err
	}
	// dec read the key; the colon after it is still in its buffer.
	c, err := skipSpaces(src)
	if err == nil && c != ':' {
		err = fmt.Errorf("invalid character %q after object key", c)
	}
	if err == nil {
		c, err = skipSpaces(src)
	}
	if err != nil {
		return nil, dec, under, err
	}
	if c != '[' {
		var ull [3]byte
		if _, err := io.ReadFull(src, ull[:]); c != 'n' || err != nil || string(ull[:]) != "ull" {
			return nil, dec, under, errors.New("want an array")
		}
		next, nextUnder, err := rest()
		return nil, next, nextUnder, err
	}
	out := []T{}
	quit := make(chan struct{})
	batches, free := delimitElements(src, quit)
	fail := func(err error) ([]T, *json.Decoder, io.Reader, error) {
		// Stop the delimiter and wait until it no longer reads src.
		close(quit)
		for range batches {
		}
		return nil, dec, under, err
	}
	for b := range batches {
		if b.err != nil {
			return fail(b.err)
		}
		start := 0
		for _, end := range b.ends {
			v, err := decode(b.data[start:end])
			if err != nil {
				return fail(err)
			}
			out = append(out, v)
			start = end
		}
		if b.last {
			// The delimiter has stopped: src is this goroutine's again.
			next, nextUnder, err := rest()
			return out, next, nextUnder, err
		}
		// Decoded values hold no part of the batch: its buffer is reused.
		select {
		case free <- b.data[:0]:
		default:
		}
	}
	return nil, dec, under, io.ErrUnexpectedEOF // not reached: the last batch has last or err
}

// elementBatch is a run of consecutive elements of an array: data holds
// them one after the other, each ending at the next of ends.
type elementBatch struct {
	data []byte
	ends []int
	last bool  // the array's "]" came after them
	err  error // reading the next element failed
}

// batchBytes is about how much JSON an elementBatch holds.
const batchBytes = 256 << 10

// delimitElements finds the elements of the array src is in (after its
// "[") in a goroutine of its own and sends them in batches, so that
// finding where elements end (with the decompression under it) and
// decoding them run on two processors at once: about a third less time
// for a large restore. The batch with last or err is the last one; the
// channel is closed after it, and from then the goroutine does not read
// src. Closing quit stops it early (the channel is closed then too).
// Buffers the caller is done with may be handed back through free.
func delimitElements(src *bufio.Reader, quit <-chan struct{}) (<-chan elementBatch, chan<- []byte) {
	out := make(chan elementBatch, 2)
	free := make(chan []byte, 3)
	go func() {
		defer close(out)
		newBatch := func() elementBatch {
			select {
			case buf := <-free:
				return elementBatch{data: buf}
			default:
				return elementBatch{data: make([]byte, 0, batchBytes+batchBytes/4)}
			}
		}
		b := newBatch()
		for first := true; ; first = false {
			select {
			case <-quit:
				return
			default:
			}
			data, end, err := nextElement(src, b.data, first)
			switch {
			case err != nil:
				b.err = err
			case end:
				b.last = true
			default:
				b.data = data
				b.ends = append(b.ends, len(data))
			}
			if b.err == nil && !b.last && len(b.data) < batchBytes {
				continue
			}
			select {
			case out <- b:
			case <-quit:
				return
			}
			if b.err != nil || b.last {
				return
			}
			b = newBatch()
		}
	}()
	return out, free
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

// skipSpaces returns the next byte that is not JSON whitespace.
func skipSpaces(src *bufio.Reader) (byte, error) {
	for {
		c, err := src.ReadByte()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// nextElement appends the next element of an array to buf, after the
// separating comma unless first; end reports the array's "]" instead. It
// only delimits: the element's validity is the decoder's concern.
func nextElement(src *bufio.Reader, buf []byte, first bool) (elem []byte, end bool, err error) {
	c, err := skipSpaces(src)
	if err != nil {
		return nil, false, err
	}
	if c == ']' {
		return buf, true, nil
	}
	if !first {
		if c != ',' {
			return nil, false, fmt.Errorf("invalid character %q after array element", c)
		}
		if c, err = skipSpaces(src); err != nil {
			return nil, false, err
		}
	}
	if c == ']' || c == ',' {
		return nil, false, fmt.Errorf("invalid character %q looking for an array element", c)
	}
	buf = append(buf, c)
	depth := 0
	inString := c == '"'
	switch c {
	case '{', '[':
		depth = 1
	case '"':
	default: // a literal: up to the next delimiter
		for {
			c, err := src.ReadByte()
			if err != nil {
				return nil, false, unexpectedEOF(err)
			}
			if c == ',' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				src.UnreadByte()
				return buf, false, nil
			}
			buf = append(buf, c)
		}
	}
	escaped := false
	for depth > 0 || inString {
		// Scan what src holds in one tight loop rather than a call per
		// byte: this is most of a restore's reading.
		if src.Buffered() == 0 {
			if _, err := src.Peek(1); err != nil {
				return nil, false, unexpectedEOF(err)
			}
		}
		b, _ := src.Peek(src.Buffered())
		i := 0
		for i < len(b) && (depth > 0 || inString) {
			if !inString {
				switch b[i] {
				case '"':
					inString = true
				case '{', '[':
					depth++
				case '}', ']':
					depth--
				}
				i++
				continue
			}
			if escaped {
				escaped = false
				i++
				continue
			}
			// Inside a string: to its closing quote or the next escape,
			// found by IndexByte rather than byte by byte (most of an
			// image's bytes are in strings: uuids, names, times).
			rest := b[i:]
			q := bytes.IndexByte(rest, '"')
			if q < 0 {
				q = len(rest)
			}
			if e := bytes.IndexByte(rest[:q], '\\'); e >= 0 {
				i += e + 1
				escaped = true
				continue
			}
			i += q
			if q < len(rest) {
				i++
				inString = false
			}
		}
		buf = append(buf, b[:i]...)
		src.Discard(i)
	}
	return buf, false, nil
}

// decodeArray reads a JSON array (or null) element by element.
func decodeArray[T any](dec *json.Decoder) ([]T, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, nil
	}
	if t != json.Delim('[') {
		return nil, fmt.Errorf("want an array, found %v", t)
	}
	out := []T{}
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, expectDelim(dec, ']')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("want %v, found %v", want, t)
	}
	return nil
}
