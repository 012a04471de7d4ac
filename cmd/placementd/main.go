// Command placementd serves the OpenStack Placement API from a Raft
// replicated state machine. See README.md and docs/.
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func usage() {
	fmt.Fprint(os.Stderr, `placementd: the OpenStack Placement API on Raft, without SQL.

Usage:
  placementd serve [flags]     run a node (a fresh data dir starts a single-node cluster)
  placementd cluster status    members, leader, term, indexes, health, digests
  placementd cluster remove NODE
                               remove a (dead) member
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
  placementd version           print the version

Operator commands take --addr (any member's API address) and
--cluster-secret. See docs/cluster.md.

Run 'placementd serve --help' for the serve flags; every flag can also be
set with an environment variable PLACEMENTD_<FLAG_NAME> (upper case, dashes
as underscores) or in a YAML file given with --config (keys named as the
flags); serve also reads upstream Placement's placement.conf given with
--config-file. Precedence: flag, then environment, then the YAML file, then
placement.conf, then default.

A node serves the Placement API, /healthz, /readyz and /metrics
(Prometheus, with the cluster secret; or on --metrics-addr) on its
--http-addr. See docs/operators-guide.md.
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "cluster":
		err = clusterCommand(os.Args[2:])
	case "snapshot":
		err = snapshotCommand(os.Args[2:])
	case "export":
		err = exportCommand(os.Args[2:])
	case "import":
		err = importCommand(os.Args[2:])
	case "version", "--version":
		printVersion(os.Stdout)
	case "help", "-h", "--help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "placementd: unknown command %q\n\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "placementd:", err)
		os.Exit(1)
	}
}
