package layering

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/placementd/placementd"

// pkg is a package of the module as `go list` sees it.
type pkg struct {
	path    string // relative to the module ("" for none, "fsm/state", ...)
	dir     string
	imports []string // direct imports
	deps    []string // every package it depends on, transitively
}

func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", "list", "-f",
		"{{.ImportPath}}\t{{.Dir}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			t.Fatalf("go list line %q", sc.Text())
		}
		p := pkg{path: strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/"), dir: f[1],
			imports: strings.Fields(f[2]), deps: strings.Fields(f[3])}
		pkgs[p.path] = p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

// rule: the packages under (or at) scope must not have a dependency (or,
// if direct, an import) matching any of banned. A banned entry ending in
// "/..." matches the package and everything under it; a module-relative
// path is written "./x".
type rule struct {
	scope  string
	direct bool
	banned []string
	why    string
}

var rules = []rule{
	{"fsm/state", false, []string{"github.com/hashicorp/raft/...", "net/http/...", "github.com/gorilla/mux", "./cluster/...", "./httpapi/...", "./fsm", "./snapshot/..."},
		"the state is the domain alone, deterministic, testable without a node"},
	{"fsm/image", false, []string{"github.com/hashicorp/raft/...", "net/http/...", "./cluster/...", "./httpapi/...", "./fsm", "./fsm/candidates", "./snapshot/..."},
		"the snapshot body's codec and the digest stand on the state alone, usable without a node"},
	{"fsm/state", false, []string{"./fsm/image"}, "the codec depends on the state, never the reverse"},
	{"fsm/...", false, []string{"./snapshot/..."},
		"fsm owns the persisted formats; the migration tools in snapshot/ build on it, never the reverse (no loop between fsm/ and snapshot/)"},
	{"snapshot/...", false, []string{"./fsm/image"}, "the migration tools read and write export documents, not persisted formats"},
	{"fsm/candidates", false, []string{"./fsm/image", "./snapshot/..."}, "candidate search reads a state version, never a persisted format"},
	{"fsm/candidates", false, []string{"github.com/hashicorp/raft/...", "net/http/...", "github.com/gorilla/mux", "./cluster/...", "./httpapi/...", "./fsm"},
		"candidate search is domain logic over one state version"},
	// fsm implements raft.FSM, and hashicorp/raft itself pulls in
	// net/http: the HTTP rule is on fsm's own imports.
	{"fsm", true, []string{"net/http/...", "github.com/gorilla/mux", "github.com/hashicorp/raft-boltdb/...", "go.etcd.io/bbolt"},
		"fsm owns formats and Apply; HTTP, Raft's stores and transport are the cluster's"},
	{"fsm", false, []string{"./cluster/...", "./httpapi/..."},
		"fsm owns formats and Apply; the cluster drives it, never the reverse"},
	{"httpapi/...", true, []string{"github.com/hashicorp/raft/...", "go.etcd.io/bbolt", "./fsm"},
		"the API reaches Raft only through Backend (the cluster)"},
	{"httpapi/...", false, []string{"./cluster", "./cluster/front", "./cluster/metrics"},
		"the API names only the node's errors and read options (cluster/backend), so that it runs over any Backend"},
	{"httpapi/policy", false, []string{"./..."}, "a self-contained policy engine"},
	{"httpapi/schema", false, []string{"./..."}, "a self-contained validator"},
	{"httpapi/httpguard", false, []string{"./..."}, "HTTP limits that know nothing of Placement"},
	{"bench/cmd/placement-bigbody", false, []string{"./..."}, "it measures a running server over HTTP"},
	{"bench/cmd/placement-unread", false, []string{"./..."}, "it measures a running server over HTTP"},
	{"cluster", false, []string{"./httpapi/...", "./snapshot/export", "./snapshot/upstream"},
		"the cluster knows nothing of Placement's HTTP API"},
	{"cluster", false, []string{"./cluster/front"},
		"the node never imports its HTTP front: the front uses the node through the node's methods (frontapi.go)"},
	{"cluster/front", false, []string{"./httpapi/...", "./snapshot/export", "./snapshot/upstream"},
		"the front forwards and describes any API, knowing nothing of Placement's routes"},
	{"cluster/backend", false, []string{"./...", "github.com/hashicorp/raft/..."},
		"the API names it without importing the node or Raft"},
	{"cluster/metrics", false, []string{"./httpapi/...", "./cluster/front"}, "the API reports through httpapi.Observer; the node is read through its methods"},
	{"snapshot/...", false, []string{"./cluster/...", "./httpapi/...", "./fsm", "github.com/hashicorp/raft/..."},
		"snapshot bodies and export documents stand without a node"},
	{"cluster/raftlog", false, []string{"./..."}, "a log adapter any command may use"},
	{"cmd/placementd/gcfloor", false, []string{"./..."}, "a runtime setting serve and the benchmarks share"},
	{"internal/faults/model", false, []string{"./..."}, "the model states the rules independently of fsm/state"},
	{"internal/difftest", false, []string{"./..."}, "it talks to both servers over HTTP only"},
	{"internal/wanlab/...", false, []string{"./fsm/...", "./cluster/...", "./httpapi/...", "./snapshot/..."}, "any test may use the lab"},
	{"bench/loadgen", false, []string{"./..."}, "the same workload measures upstream and placementd"},
	// The harness and the tools that run the real binary.
	{"internal/testcluster", false, []string{"./httpapi/..."},
		"httpapi's own tests use the harness: the caller hands Cluster its API"},
	{"internal/faults", true, []string{"./fsm/...", "./httpapi/..."}, "it drives real processes over HTTP"},
	{"bench/cmd/placement-scale", true, []string{"./cluster/...", "./fsm/...", "./httpapi/..."}, "it measures the real binary"},
	{"bench/cmd/wan-bench", true, []string{"./fsm/...", "./httpapi/..."}, "the nodes it measures are real processes"},
}

// testTools are the folders of test tooling and benchmarks: not shipped.
var testTools = []string{"internal/...", "bench/..."}

// No production package (every package outside the test tools) depends
// on test tools: they are not shipped.
func TestProductionImportsNoTestTools(t *testing.T) {
	n := 0
	for rel, p := range listPackages(t) {
		if inScope(testTools[0], rel) || inScope(testTools[1], rel) {
			continue
		}
		n++
		for _, dep := range p.deps {
			for _, tool := range testTools {
				if matches("./"+tool, dep) {
					t.Errorf("%s imports %s: test tools (%v) are not shipped", rel, dep, testTools)
				}
			}
		}
	}
	if n < 15 {
		t.Fatalf("only %d production packages", n)
	}
}

// knownFolderEdges are imports between top-level folders that close a
// loop today and are being removed: each names who removes it. None is
// left (issue 33 removed fsm -> snapshot); keep the map for the next.
var knownFolderEdges = map[[2]string]string{}

// No loop of imports between top-level folders (cluster, fsm, httpapi,
// snapshot, cmd, internal, bench): each folder is a layer over the ones
// it imports.
func TestNoLoopBetweenTopFolders(t *testing.T) {
	edges := folderEdges(listPackages(t))
	for e, who := range knownFolderEdges {
		if _, ok := edges[e[0]][e[1]]; !ok {
			t.Errorf("known edge %s -> %s (%s) is gone: remove it from knownFolderEdges", e[0], e[1], who)
		}
		delete(edges[e[0]], e[1])
	}
	if loop := folderLoop(edges); loop != nil {
		t.Errorf("import loop between top-level folders: %s (%s)", strings.Join(loop, " -> "), edges[loop[0]][loop[1]])
	}
}

// folderEdges is the graph of imports between top-level folders: for
// each import of one folder's package by another's, one example.
func folderEdges(pkgs map[string]pkg) map[string]map[string]string {
	top := func(rel string) string { f, _, _ := strings.Cut(rel, "/"); return f }
	edges := map[string]map[string]string{}
	for rel, p := range pkgs {
		from := top(rel)
		for _, imp := range p.imports {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if to := top(dep); to != from {
				if edges[from] == nil {
					edges[from] = map[string]string{}
				}
				edges[from][to] = rel + " imports " + dep
			}
		}
	}
	return edges
}

// folderLoop returns a loop of edges (its first folder repeated at the
// end), or nil when there is none.
func folderLoop(edges map[string]map[string]string) []string {
	const (
		unseen = iota
		onPath
		done
	)
	mark := map[string]int{}
	var path []string
	var visit func(f string) []string
	visit = func(f string) []string {
		mark[f] = onPath
		path = append(path, f)
		for _, to := range slices.Sorted(maps.Keys(edges[f])) {
			switch mark[to] {
			case onPath:
				i := slices.Index(path, to)
				return append(slices.Clone(path[i:]), to)
			case unseen:
				if loop := visit(to); loop != nil {
					return loop
				}
			}
		}
		path = path[:len(path)-1]
		mark[f] = done
		return nil
	}
	for _, f := range slices.Sorted(maps.Keys(edges)) {
		if mark[f] == unseen {
			if loop := visit(f); loop != nil {
				return loop
			}
		}
	}
	return nil
}

// matches reports whether import path p (full) is what pattern names.
func matches(pattern, p string) bool {
	if rest, ok := strings.CutPrefix(pattern, "./"); ok {
		pattern = module + "/" + rest
		if rest == "..." {
			return strings.HasPrefix(p, module+"/") || p == module
		}
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

// inScope reports whether module-relative package path rel is in scope.
func inScope(scope, rel string) bool {
	if base, ok := strings.CutSuffix(scope, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == scope
}

func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	for _, r := range rules {
		n := 0
		for rel, p := range pkgs {
			if !inScope(r.scope, rel) {
				continue
			}
			n++
			list := p.deps
			if r.direct {
				list = p.imports
			}
			for _, dep := range list {
				for _, b := range r.banned {
					if matches(b, dep) && dep != module+"/"+rel {
						t.Errorf("%s imports %s (rule: %s must not import %s: %s)", rel, dep, r.scope, b, r.why)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("rule for %s matches no package (renamed?)", r.scope)
		}
	}
}

// Every package has a doc.go whose package comment says what it must not
// import (or that it imports nothing of placementd).
func TestEveryPackageHasDocGo(t *testing.T) {
	for rel, p := range listPackages(t) {
		b, err := os.ReadFile(filepath.Join(p.dir, "doc.go"))
		if err != nil {
			t.Errorf("%s: no doc.go", rel)
			continue
		}
		if !strings.Contains(string(b), "import") {
			t.Errorf("%s/doc.go does not say what the package must not import", rel)
		}
	}
}

// The loop check can fail: a loop through three folders is found, and a
// graph without one passes.
func TestFolderLoop(t *testing.T) {
	loop := folderLoop(map[string]map[string]string{
		"a": {"b": ""}, "b": {"c": ""}, "c": {"a": "", "d": ""},
	})
	if strings.Join(loop, " ") != "a b c a" {
		t.Errorf("loop a -> b -> c -> a: found %v", loop)
	}
	if loop := folderLoop(map[string]map[string]string{"a": {"b": "", "c": ""}, "b": {"c": ""}}); loop != nil {
		t.Errorf("no loop: found %v", loop)
	}
}

// The rules can fail: a package that imports a banned one is caught.
func TestMatchers(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"github.com/hashicorp/raft/...", "github.com/hashicorp/raft", true},
		{"github.com/hashicorp/raft/...", "github.com/hashicorp/raft-boltdb/v2", false},
		{"./cluster/...", module + "/cluster/metrics", true},
		{"./fsm", module + "/fsm/state", false},
		{"./...", module + "/fsm", true},
		{"./...", "github.com/google/uuid", false},
		{"net/http/...", "net/http/httptest", true},
	} {
		if got := matches(c.pattern, c.path); got != c.want {
			t.Errorf("matches(%q, %q) = %v", c.pattern, c.path, got)
		}
	}
}
