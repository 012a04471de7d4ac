package fsm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The table holds every command fsm/state defines, each under its own
// Kind(): a command missing from it could be proposed (Encode writes its
// Kind) but never applied, and a key other than its Kind would never be
// written. The commands are found in state's source, as the methods
// "Kind() string" returning a constant.
func TestCommandTable(t *testing.T) {
	files, err := filepath.Glob("state/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("state's sources: %v %v", files, err)
	}
	inSource := map[string]string{} // kind → type name
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Kind" || len(fn.Body.List) != 1 {
				continue
			}
			ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
			if !ok || len(ret.Results) != 1 {
				continue
			}
			lit, ok := ret.Results[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: Kind does not return a constant", fset.Position(fn.Pos()))
				continue
			}
			kind, _ := strconv.Unquote(lit.Value)
			recv := fn.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			inSource[kind] = recv.(*ast.Ident).Name
		}
	}
	if len(inSource) < 20 {
		t.Fatalf("found %d commands in fsm/state: %v", len(inSource), inSource)
	}
	for kind, typ := range inSource {
		cmd := NewCommand(kind)
		if cmd == nil {
			t.Errorf("state.%s (kind %q) is not in the table", typ, kind)
			continue
		}
		if got := reflect.TypeOf(cmd).Elem().Name(); got != typ {
			t.Errorf("kind %q makes a %s, want state.%s", kind, got, typ)
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(commands)) {
		if got := commands[kind]().Kind(); got != kind {
			t.Errorf("table key %q makes a command of kind %q", kind, got)
		}
	}
	if NewCommand("no.such_kind") != nil {
		t.Error("an unknown kind makes a command")
	}
}
