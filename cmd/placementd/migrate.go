package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/image"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/snapshot/export"
	"github.com/placementd/placementd/snapshot/upstream"
)

// Migration commands (docs/migration.md):
//
//	placementd export FILE [--from URL --token T]
//	placementd import --file FILE | --from URL [--token T] [--force]

// migrateFlags are the flags export and import share.
type migrateFlags struct {
	operatorFlags
	from, token, placementdToken string
	workers                      int
}

func (m *migrateFlags) register(fs *flag.FlagSet) {
	m.operatorFlags.register(fs)
	// Reading thousands of providers takes longer than an operator call.
	t := fs.Lookup("timeout")
	t.DefValue = "1h"
	t.Value.Set(t.DefValue)
	fs.StringVar(&m.from, "from", "", "URL of a running Placement API to read (as in the Keystone catalog)")
	fs.StringVar(&m.token, "token", "", "X-Auth-Token for --from: a token with the admin role (\"admin\" for noauth2)")
	fs.IntVar(&m.workers, "workers", 8, "requests in flight at once against --from")
}

func (m *migrateFlags) source() *upstream.Endpoint {
	return &upstream.Endpoint{URL: m.from, Token: m.token}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func exportCommand(args []string) error {
	fs := flag.NewFlagSet("placementd export", flag.ContinueOnError)
	var m migrateFlags
	m.register(fs)
	pos, err := parseCommand(fs, args)
	if err != nil {
		return ignoreHelp(err)
	}
	if len(pos) != 1 {
		return errors.New("usage: placementd export FILE [--addr ADDR --cluster-secret S | --from URL --token T]")
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	var doc *export.Document
	if m.from != "" {
		if doc, err = upstream.Read(ctx, m.source(), upstream.ReadOptions{Workers: m.workers, Progress: progress}); err != nil {
			return err
		}
	} else {
		img, err := clusterImage(ctx, m.client())
		if err != nil {
			return err
		}
		doc = export.FromImage(img)
		doc.Source = fmt.Sprintf("placementd at %s, state index %d", m.addr, img.LastIndex)
		doc.ExportedAt = time.Now().UTC()
	}
	if err := writeFileAtomic(pos[0], func(w io.Writer) error { return export.Write(w, doc) }); err != nil {
		return err
	}
	fmt.Printf("exported %s: %s, %d allocations\n", pos[0], doc.Summary(), doc.Allocations())
	return nil
}

// clusterImage is the cluster's state, through a consistent snapshot.
func clusterImage(ctx context.Context, c *front.Client) (*state.Image, error) {
	var buf bytes.Buffer
	if err := c.Snapshot(ctx, &buf); err != nil {
		return nil, err
	}
	return fsm.ReadSnapshot(&buf)
}

func writeFileAtomic(file string, write func(io.Writer) error) error {
	if file == "-" {
		return write(os.Stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

func importCommand(args []string) error {
	fs := flag.NewFlagSet("placementd import", flag.ContinueOnError)
	var m migrateFlags
	m.register(fs)
	var file string
	var force, verifyOnly, noVerify bool
	var chunkBytes int
	fs.StringVar(&file, "file", "", "an export document to import (placementd export)")
	fs.BoolVar(&force, "force", false, "import into a cluster that holds placement data, REPLACING all of it")
	fs.IntVar(&chunkBytes, "chunk-bytes", 1<<20, "approximate size of one Raft entry of the import")
	fs.BoolVar(&verifyOnly, "verify-only", false, "load nothing: compare the cluster with the source")
	fs.BoolVar(&noVerify, "no-verify", false, "skip the verification pass")
	fs.StringVar(&m.placementdToken, "placementd-token", "admin", "X-Auth-Token for placementd's own API in the verification of --from")
	pos, err := parseCommand(fs, args)
	if err != nil {
		return ignoreHelp(err)
	}
	if len(pos) != 0 || (file == "") == (m.from == "") {
		return errors.New("usage: placementd import --file FILE | --from URL [--token T] [--force] [--addr ADDR --cluster-secret S]")
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	c := m.client()

	before, err := c.ImportContents(ctx)
	if err != nil {
		return fmt.Errorf("asking the cluster what it holds: %w", err)
	}
	if !verifyOnly && !before.Empty() && !force {
		return fmt.Errorf("the cluster at %s is not empty (%s): import into a new cluster, or give --force to replace its state", m.addr, before)
	}

	var doc *export.Document
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		doc, err = export.Read(f)
		f.Close()
		if err != nil {
			return err
		}
	} else if doc, err = upstream.Read(ctx, m.source(), upstream.ReadOptions{Workers: m.workers, Progress: progress}); err != nil {
		return err
	}

	if !verifyOnly {
		if err := load(ctx, c, doc, chunkBytes, force && !before.Empty()); err != nil {
			return err
		}
	}
	if noVerify {
		return nil
	}
	var diffs []string
	if file != "" {
		diffs, err = verifyFile(ctx, c, doc)
	} else {
		diffs, err = verifyAPI(ctx, &m, doc)
	}
	if err != nil {
		return fmt.Errorf("verification: %w", err)
	}
	if len(diffs) > 0 {
		for _, d := range diffs {
			fmt.Println("DIFFERENCE", d)
		}
		return fmt.Errorf("verification found %d differences", len(diffs))
	}
	return nil
}

// load checks the document offline, then loads it chunk by chunk.
func load(ctx context.Context, c *front.Client, doc *export.Document, chunkBytes int, replace bool) error {
	if _, err := export.Load(doc, time.Now()); err != nil {
		return fmt.Errorf("the source cannot be imported: %w", err)
	}
	chunks, err := export.Chunks(doc, chunkBytes, replace)
	if err != nil {
		return err
	}
	progress("loading %s, %d allocations in %d Raft entries", doc.Summary(), doc.Allocations(), len(chunks))
	for i, chunk := range chunks {
		res, err := applyChunk(ctx, c, chunk)
		if err != nil {
			return fmt.Errorf("chunk %d/%d: %w (the cluster holds a partial import: run again with --force to replace it)", i+1, len(chunks), err)
		}
		progress("chunk %d/%d: +%d providers, +%d consumers, +%d allocations", i+1, len(chunks), res.Providers, res.Consumers, res.Allocations)
	}
	got, err := c.ImportContents(ctx)
	if err != nil {
		return err
	}
	if want := doc.Summary(); got != want {
		return fmt.Errorf("after the import the cluster holds %s, not %s", got, want)
	}
	fmt.Printf("imported %s, %d allocations in %d Raft entries\n", got, doc.Allocations(), len(chunks))
	return nil
}

// applyChunk sends a chunk, and when the answer is lost or the leader
// changed, finds out from the cluster's contents whether it was applied
// before sending it again.
func applyChunk(ctx context.Context, c *front.Client, chunk *state.ImportChunk) (state.ImportResult, error) {
	before, err := c.ImportContents(ctx)
	if err != nil {
		return state.ImportResult{}, err
	}
	if chunk.First && chunk.Replace {
		before = state.Contents{}
	}
	after := before
	after.Providers += len(chunk.Providers)
	after.CustomClasses += len(chunk.CustomClasses)
	after.CustomTraits += len(chunk.CustomTraits)
	after.ConsumerTypes += len(chunk.ConsumerTypes)
	after.Consumers += len(chunk.Consumers)
	for attempt := 0; ; attempt++ {
		res, err := c.Import(ctx, chunk)
		var se *front.StatusError
		if err == nil || (errors.As(err, &se) && se.Code != 503) || attempt == 5 {
			return res, err
		}
		progress("retrying a chunk: %v", err)
		time.Sleep(time.Second)
		now, cerr := c.ImportContents(ctx)
		switch {
		case cerr != nil:
			continue
		case now == after:
			return state.ImportResult{Providers: len(chunk.Providers), Consumers: len(chunk.Consumers)}, nil
		case now != before && !(chunk.First && chunk.Replace):
			return res, fmt.Errorf("the cluster changed during the import (%s)", now)
		}
	}
}

// verifyFile compares the cluster's state with the document.
func verifyFile(ctx context.Context, c *front.Client, doc *export.Document) ([]string, error) {
	img, err := clusterImage(ctx, c)
	if err != nil {
		return nil, err
	}
	diffs := export.Compare(doc, export.FromImage(img))
	if len(diffs) == 0 {
		fmt.Printf("verified: the cluster holds what the file describes (state digest %s, as cluster status shows it)\n", image.Digest(img))
	}
	return diffs, nil
}

// verifyAPI sends every GET that shows a resource of the source to both
// APIs and compares the answers.
func verifyAPI(ctx context.Context, m *migrateFlags, doc *export.Document) ([]string, error) {
	src := m.source()
	maxV, err := src.MaxVersion(ctx)
	if err != nil {
		return nil, err
	}
	version := "1.39"
	if minorOf(maxV) < 39 {
		version = maxV
	}
	// The same address, scheme and TLS as the import's operator calls.
	pd := m.client()
	dst := &upstream.Endpoint{URL: pd.BaseURL(), Token: m.placementdToken}
	if pd.TLS != nil {
		dst.HTTP = pd.HTTPClient()
	}
	reqs := upstream.Requests(doc, version)
	progress("verifying: %d GETs on both APIs at microversion %s", len(reqs), version)
	diffs, err := upstream.Compare(ctx, src, dst, reqs, m.workers)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(diffs))
	for i, d := range diffs {
		out[i] = d.String()
	}
	if len(out) == 0 {
		fmt.Printf("verified: %d GETs answer the same on %s and placementd\n", len(reqs), m.from)
	}
	return out, nil
}

func minorOf(version string) int {
	var n int
	if _, err := fmt.Sscanf(version, "1.%d", &n); err != nil {
		return -1
	}
	return n
}
