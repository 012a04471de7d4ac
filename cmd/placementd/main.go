package main

import (
	"fmt"
	"io"
	"os"
)

// usage writes the commands' summary: to stdout when asked for
// (placementd --help | less), to stderr after a usage error.
func usage(w io.Writer) {
	fmt.Fprint(w, `placementd: the OpenStack Placement API on Raft, without SQL.

Usage:
  placementd serve [flags]     run a node (a fresh data dir starts a single-node cluster)
  placementd cluster status    members, leader, term, indexes, health, digests
  placementd cluster remove NODE
                               remove a (dead) member
  placementd cluster transfer-leadership [--to NODE]
                               hand leadership to another voter
  placementd cluster recover --data-dir DIR [--node-id ID] [--dry-run]
                               make a stopped survivor of a lost quorum the only
                               voter of its cluster
  placementd snapshot save FILE
                               back up a live cluster (consistent snapshot)
  placementd snapshot restore FILE --data-dir DIR
                               seed the first node of a new cluster from a backup
  placementd snapshot inspect FILE
                               check a backup and print its state digest
  placementd export FILE       write the state as a JSON document (--from URL: of
                               a running upstream Placement)
  placementd import --file FILE | --from URL [--token T]
                               load an export, or a running upstream Placement,
                               into an empty cluster, then verify it
                               (docs/migration.md)
  placementd version           print the version and the data formats it reads

Operator commands take --addr (any member's API address) and
--cluster-secret. See docs/cluster.md.

Run 'placementd serve --help' for the serve flags; every flag can also be
set with an environment variable PLACEMENTD_<FLAG_NAME> (upper case, dashes
as underscores) or in a YAML file given with --config (keys named as the
flags); serve also reads upstream Placement's placement.conf given with
--config-file. Precedence: flag, then environment, then the YAML file, then
placement.conf, then default.

A node serves the Placement API, /healthz, /readyz and /metrics
(Prometheus, with --metrics-token or the cluster secret, or from loopback
on a node with neither; or on --metrics-addr) on its --http-addr. See docs/operators-guide.md.
`)
}

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	os.Exit(command(os.Args[1:]))
}

// command runs one placementd command and returns the exit status.
func command(args []string) int {
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:])
	case "cluster":
		err = clusterCommand(args[1:])
	case "snapshot":
		err = snapshotCommand(args[1:])
	case "export":
		err = exportCommand(args[1:])
	case "import":
		err = importCommand(args[1:])
	case "version", "--version":
		printVersion(os.Stdout)
	case "help", "-h", "-help", "--help":
		usage(os.Stdout)
	default:
		fmt.Fprintf(os.Stderr, "placementd: unknown command %q\n\n", args[0])
		usage(os.Stderr)
		return 2
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "placementd:", err)
		return 1
	}
	return 0
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}
