package snapshot

import (
	"bufio"
	"encoding/json"
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
func decodeImage(dec *json.Decoder) (*state.Image, error) {
	var img state.Image
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
			img.Providers, err = decodeArray[state.ProviderImage](dec)
		case strings.EqualFold(key, "CustomClasses"):
			img.CustomClasses, err = decodeArray[state.ResourceClass](dec)
		case strings.EqualFold(key, "CustomTraits"):
			img.CustomTraits, err = decodeArray[state.Trait](dec)
		case strings.EqualFold(key, "ConsumerTypes"):
			img.ConsumerTypes, err = decodeArray[state.ConsumerType](dec)
		case strings.EqualFold(key, "Consumers"):
			img.Consumers, err = decodeArray[state.ConsumerImage](dec)
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
