package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
)

// operatorFlags are the flags of the commands that talk to a running
// cluster's operator API.
type operatorFlags struct {
	addr, secret string
	tls          *tls.Config // from --tls-ca-file; nil: plain http unless --addr says https://
	timeout      time.Duration
}

func (o *operatorFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8778", "API address (host:port or URL) of any member; https://HOST:PORT for a cluster serving HTTPS")
	fs.StringVar(&o.secret, "cluster-secret", "", "the cluster secret (on a command line it shows in ps: prefer PLACEMENTD_CLUSTER_SECRET or a --config file)")
	// Named as serve's flag, so a node's --config file serves here too.
	// Loaded as it is parsed, so a bad file is reported as a bad flag.
	fs.Func("tls-ca-file", "PEM `file` of the CA certificates that verify the API's certificate; implies https for an --addr without a scheme (an https:// --addr alone uses the system roots)", func(path string) error {
		pool, err := loadCAFile("--tls-ca-file", path)
		if err != nil {
			return err
		}
		o.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		return nil
	})
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up after this long")
}

func (o *operatorFlags) client() *front.Client {
	return &front.Client{Addr: o.addr, Secret: o.secret, TLS: o.tls}
}

// parseCommand parses args into fs (flags may follow the positional
// arguments) and returns the positional arguments.
func parseCommand(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := presetFlags(fs, args, false); err != nil {
		return nil, err
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

const clusterUsage = `Usage:
  placementd cluster status [flags]        members, leader, term, indexes, health, digests
  placementd cluster remove NODE [flags]   remove a (dead) member
  placementd cluster recover --data-dir DIR [--node-id ID] [--dry-run]
                                           make a stopped survivor of a lost quorum the
                                           only voter of its cluster (operators-guide,
                                           "Outage recovery")

Run 'placementd cluster COMMAND --help' for the flags (--addr, --cluster-secret, ...).
`

func clusterCommand(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: placementd cluster status|remove NODE|transfer-leadership [--to NODE] [--addr ADDR] [--cluster-secret S]")
	}
	if isHelp(args[0]) {
		fmt.Print(clusterUsage)
		return nil
	}
	if args[0] == "recover" {
		return recoverCommand(os.Stdout, args[1:])
	}
	fs := flag.NewFlagSet("placementd cluster "+args[0], flag.ContinueOnError)
	var o operatorFlags
	o.register(fs)
	var to, output string
	switch args[0] {
	case "transfer-leadership":
		fs.StringVar(&to, "to", "", "voter to hand leadership to (default: the one Raft finds most up to date)")
	case "status":
		fs.StringVar(&output, "o", "table", "output: table, or json (the whole report, an unreachable member's full error included)")
	}
	pos, err := parseCommand(fs, args[1:])
	if err != nil {
		return ignoreHelp(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	switch args[0] {
	case "status":
		if output != "table" && output != "json" {
			return fmt.Errorf("-o %q: want table or json", output)
		}
		st, err := o.client().Status(ctx)
		if err != nil {
			return err
		}
		if output == "json" {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(st)
		}
		printStatus(os.Stdout, st)
		return nil
	case "remove":
		if len(pos) != 1 {
			return errors.New("usage: placementd cluster remove NODE")
		}
		// Removing the leader hands leadership over first and answers
		// 503: the new leader then carries out the same request.
		for {
			err := o.client().Remove(ctx, pos[0])
			var se *front.StatusError
			if err == nil {
				break
			}
			if !errors.As(err, &se) || se.Code != http.StatusServiceUnavailable || ctx.Err() != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(200 * time.Millisecond):
			}
		}
		fmt.Printf("removed %s\n", pos[0])
		return nil
	case "transfer-leadership":
		if len(pos) != 0 {
			return errors.New("usage: placementd cluster transfer-leadership [--to NODE]")
		}
		res, err := o.client().TransferLeadership(ctx, to)
		if err != nil {
			return err
		}
		if res.To == "" {
			res.To = "(not known yet)"
		}
		fmt.Printf("leadership moved from %s to %s\n", res.From, res.To)
		return nil
	}
	return fmt.Errorf("unknown cluster command %q (status, remove, transfer-leadership, recover)", args[0])
}

// recoverCommand is `placementd cluster recover`: on a stopped member's
// data dir, with no quorum left to join, make it the only voter.
func recoverCommand(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("placementd cluster recover", flag.ContinueOnError)
	var dataDir, id string
	var dryRun bool
	fs.StringVar(&dataDir, "data-dir", "", "the data dir of the stopped member to recover (required)")
	fs.StringVar(&id, "node-id", "", "the member's id (default: the one kept in the data dir)")
	fs.BoolVar(&dryRun, "dry-run", false, "change nothing: print the member's last log index and term (run it on every survivor and recover the one with the highest term, then index)")
	pos, err := parseCommand(fs, args)
	if err != nil {
		return ignoreHelp(err)
	}
	if len(pos) != 0 || dataDir == "" {
		return errors.New("usage: placementd cluster recover --data-dir DIR [--node-id ID] [--dry-run]")
	}
	res, err := cluster.Recover(dataDir, id, dryRun, nil)
	if err != nil {
		return err
	}
	removed := strings.Join(res.Removed, ", ")
	if removed == "" {
		removed = "none"
	}
	if dryRun {
		fmt.Fprintf(w, "%s (raft %s): last log index %d, term %d; other members of its configuration: %s (nothing changed)\n",
			res.NodeID, res.RaftAddr, res.LastIndex, res.Term, removed)
		return nil
	}
	// The API addresses of the old members, which `serve` would try to
	// join through: they must not come back with their data.
	os.Remove(filepath.Join(dataDir, peersFile))
	fmt.Fprintf(w, "recovered %s (raft %s) as the only voter of its cluster\n", res.NodeID, res.RaftAddr)
	fmt.Fprintf(w, "  last log index %d, term %d\n", res.LastIndex, res.Term)
	fmt.Fprintf(w, "  state digest %s at state index %d\n", res.Digest, res.StateIndex)
	fmt.Fprintf(w, "  removed from its configuration: %s\n", removed)
	fmt.Fprintf(w, "Start `placementd serve` on %s: it leads alone. Never start the removed members on their old data dirs: wipe them and join them as new nodes.\n", dataDir)
	return nil
}

func printStatus(w io.Writer, st front.ClusterStatus) {
	fmt.Fprintf(w, "leader: %s  term: %d\n", st.Leader, st.Term)
	cv := st.ClusterVersion
	fmt.Fprintf(w, "cluster version: %s (every member reads them; oldest build %s)\n\n", formatsShort(cv.Formats), cv.BuildVersion)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	shortened := false
	fmt.Fprintln(tw, "NODE\tROLE\tSTATE\tHEALTHY\tTERM\tCOMMIT\tAPPLIED\tSNAPSHOT\tCONTACT\tAPI\tRAFT\tDIGEST\tREGION\tBUILD\tREADS")
	for _, m := range st.Members {
		role := "voter"
		if !m.Voter {
			role = "non-voter"
		}
		region := m.Region
		if m.Zone != "" {
			region += "/" + m.Zone
		}
		if region == "" {
			region = "-"
		}
		build := m.BuildVersion
		if build == "" {
			build = "(none reported: 0.9.0)"
		}
		build += "\t" + formatsShort(m.Reads)
		if s := m.Status; s != nil {
			contact := "-"
			if s.LastContactMS >= 0 && s.State != "Leader" {
				contact = fmt.Sprintf("%dms", s.LastContactMS)
			}
			digest := s.Digest
			if len(digest) > 12 {
				digest = digest[:12]
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s@%d\t%s\t%s\n", m.ID, role, s.State, m.Healthy,
				s.Term, s.CommitIndex, s.AppliedIndex, s.LastSnapshotIndex, contact, m.HTTPAddr, m.RaftAddr, digest, s.StateIndex, region, build)
		} else {
			reason := shortReason(m.Error)
			shortened = shortened || reason != m.Error
			fmt.Fprintf(tw, "%s\t%s\t?\t%v\t\t\t\t\t\t%s\t%s\t%s\t%s\t%s\n", m.ID, role, m.Healthy, m.HTTPAddr, m.RaftAddr, reason, region, build)
		}
	}
	tw.Flush()
	if shortened {
		fmt.Fprintln(w, "\n(the full errors: placementd cluster status -o json)")
	}
	for _, warning := range st.Warnings {
		fmt.Fprintf(w, "\nwarning: %s\n", warning)
	}
}

// shortReason is what the status table shows for a member whose report
// could not be had: the kind of failure, not the whole dial error (which
// -o json gives).
func shortReason(detail string) string {
	for _, r := range []struct{ in, short string }{
		{"connection refused", "down: connection refused"},
		{"deadline exceeded", "no answer: timeout"},
		{"Client.Timeout", "no answer: timeout"},
		{"i/o timeout", "no answer: timeout"},
		{"no such host", "unknown host"},
		{"no route to host", "unreachable: no route"},
		{"network is unreachable", "unreachable: network"},
		{"connection reset", "connection reset"},
		{"certificate", "TLS: certificate"},
		{"tls:", "TLS error"},
		{"EOF", "connection closed"},
	} {
		if strings.Contains(detail, r.in) {
			return r.short
		}
	}
	const max = 40
	if len(detail) > max {
		return detail[:max-3] + "..."
	}
	return detail
}

// formatsShort is "entry v4, snapshot v1, section v3".
func formatsShort(f fsm.Formats) string {
	return fmt.Sprintf("entry v%d, snapshot v%d, section v%d", f.Entry, f.Snapshot, f.ClusterSection)
}

const snapshotUsage = `Usage:
  placementd snapshot save FILE [flags]                 back up a live cluster (consistent snapshot)
  placementd snapshot restore FILE --data-dir DIR       seed the first node of a new cluster from a backup
  placementd snapshot inspect FILE                      check a backup and print its state digest

Run 'placementd snapshot COMMAND --help' for the flags.
`

func snapshotCommand(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: placementd snapshot save FILE | restore FILE --data-dir DIR | inspect FILE")
	}
	if isHelp(args[0]) {
		fmt.Print(snapshotUsage)
		return nil
	}
	fs := flag.NewFlagSet("placementd snapshot "+args[0], flag.ContinueOnError)
	var o operatorFlags
	var dataDir, nodeIDFlag string
	switch args[0] {
	case "save":
		o.register(fs)
	case "restore":
		fs.StringVar(&dataDir, "data-dir", "", "data dir of the first node of the new cluster (must not hold Raft state)")
		fs.StringVar(&nodeIDFlag, "node-id", "", "node id of that node (default: as placementd serve chooses it)")
	case "inspect":
	default:
		return fmt.Errorf("unknown snapshot command %q (save, restore, inspect)", args[0])
	}
	pos, err := parseCommand(fs, args[1:])
	if err != nil {
		return ignoreHelp(err)
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: placementd snapshot %s FILE", args[0])
	}
	file := pos[0]
	switch args[0] {
	case "save":
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		defer cancel()
		return saveSnapshot(ctx, o.client(), file)
	case "restore":
		if dataDir == "" {
			return errors.New("snapshot restore needs --data-dir")
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		digest, err := cluster.SeedRestore(data, dataDir)
		if err != nil {
			return err
		}
		id, err := nodeID(nodeIDFlag, dataDir)
		if err != nil {
			return err
		}
		fmt.Printf("%s is ready for node %s; start it with `placementd serve --data-dir %s` (without --join)\ndigest %s\n", dataDir, id, dataDir, digest)
		return nil
	default: // inspect
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		digest, idx, err := fsm.InspectSnapshot(data)
		if err != nil {
			return err
		}
		fmt.Printf("digest %s\nstate index %d\n", digest, idx)
		return nil
	}
}

// saveSnapshot downloads a snapshot to a temporary file beside file,
// checks it reads back whole, then renames it into place.
func saveSnapshot(ctx context.Context, c *front.Client, file string) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := c.Snapshot(ctx, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	tmp.Close()
	data, err := os.ReadFile(tmp.Name())
	if err != nil {
		return err
	}
	digest, idx, err := fsm.InspectSnapshot(data)
	if err != nil {
		return fmt.Errorf("the snapshot received is damaged: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	fmt.Printf("saved %s (%d bytes)\ndigest %s\nstate index %d\n", file, len(data), digest, idx)
	return nil
}

func ignoreHelp(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}
