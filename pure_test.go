package cadre_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The deterministic core — the agent state machine (loop), the prompts it
// builds (prompt), the tag protocol (tagproto) and the JSON Schema checker
// (schema), with the JSON writer they share (internal/jsonw) — does no I/O, reads no clock, draws no random numbers and
// starts no goroutines, so that a replay of an agent's journal reaches the
// state the live agent had. The root package holds the vocabulary and the
// contracts: it may name context and time, but not do I/O or hold locks.
// TestPureCore reads their source and fails on anything that breaks this.

// module is the module's import path.
const module = "github.com/cadre-ai/cadre"

// corePackages are the packages of the deterministic core, as directories
// relative to the module's root. They may import only each other and the
// root package among cadre's packages.
var corePackages = []string{"loop", "prompt", "tagproto", "schema", "internal/jsonw"}

// coreForbidden are the standard library packages the core must not
// import, with why; a path ending in "/" forbids the packages under it too.
var coreForbidden = map[string]string{
	"os":           "it does I/O",
	"os/":          "it does I/O",
	"io/fs":        "it does I/O",
	"io/ioutil":    "it does I/O",
	"net":          "it does I/O",
	"net/":         "it does I/O",
	"database/":    "it does I/O",
	"syscall":      "it does I/O",
	"log":          "it prints",
	"log/":         "it prints",
	"sync":         "the core starts no goroutines",
	"sync/":        "the core starts no goroutines",
	"context":      "the core makes no call that blocks",
	"math/rand":    "it draws random numbers",
	"math/rand/v2": "it draws random numbers",
	"crypto/rand":  "it draws random numbers",
}

// rootForbidden are those the root package must not import.
var rootForbidden = map[string]string{
	"os":        "it does I/O",
	"os/":       "it does I/O",
	"io/fs":     "it does I/O",
	"io/ioutil": "it does I/O",
	"net":       "it does I/O",
	"net/":      "it does I/O",
	"database/": "it does I/O",
	"syscall":   "it does I/O",
	"sync":      "locks belong to the implementations",
	"sync/":     "locks belong to the implementations",
}

// clockFuncs are the functions of package time that read the clock or wait
// for it.
var clockFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
	"NewTimer": true, "NewTicker": true, "Tick": true,
}

// purity is what a package may do.
type purity struct {
	forbidden map[string]string
	// cadre lists the cadre packages it may import, as directories
	// relative to the module's root ("" is the root package).
	cadre []string
}

func TestPureCore(t *testing.T) {
	core := purity{forbidden: coreForbidden, cadre: append([]string{""}, corePackages...)}
	for _, dir := range corePackages {
		t.Run(dir, func(t *testing.T) {
			for _, p := range checkPurity(t, dir, core) {
				t.Error(p)
			}
		})
	}
	t.Run("root", func(t *testing.T) {
		for _, p := range checkPurity(t, ".", purity{forbidden: rootForbidden, cadre: []string{"internal/jsonw"}}) {
			t.Error(p)
		}
	})
	if t.Failed() {
		t.Log("the deterministic core must stay pure (see docs/ARCHITECTURE.md): do the I/O, the waiting " +
			"and the goroutines in the engine (package local), and hand the loop their results as Inputs")
	}
}

// TestPureCoreCatches checks the check: a package that breaks every rule
// is reported once for each break.
func TestPureCoreCatches(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.go": `package bad

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	clock "time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/sqlite"
)

var now = clock.Now

func f(ctx context.Context) {
	go fmt.Println(os.Args, rand.N(2), http.MethodGet, cadre.RootID, loop.ToolSpawnAgent, sqlite.Open)
	clock.Sleep(clock.Since(now()))
	_ = clock.Duration(3) * clock.Second
}
`,
		"b.go": `package bad

import (
	"sync"
	. "time"
)

func g() {
	var mu sync.Mutex
	mu.Lock()
	go func() { mu.Unlock() }()
	<-After(Second)
}
`,
		"b_test.go": `package bad

import "os"

func h() { go os.Exit(0) }
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := checkPurity(t, dir, purity{forbidden: coreForbidden, cadre: []string{"", "loop"}})
	for i, p := range got {
		got[i] = strings.TrimPrefix(p, dir+string(filepath.Separator))
	}
	want := []string{
		`a.go:4:2: imports "context": the core makes no call that blocks`,
		`a.go:6:2: imports "math/rand/v2": it draws random numbers`,
		`a.go:7:2: imports "net/http": it does I/O`,
		`a.go:8:2: imports "os": it does I/O`,
		`a.go:13:2: imports "github.com/cadre-ai/cadre/sqlite", a cadre package outside the pure core (allowed: the root package, loop)`,
		`a.go:16:11: uses time.Now, which reads the clock or waits for it`,
		`a.go:19:2: starts a goroutine`,
		`a.go:20:2: uses time.Sleep, which reads the clock or waits for it`,
		`a.go:20:14: uses time.Since, which reads the clock or waits for it`,
		`b.go:4:2: imports "sync": the core starts no goroutines`,
		`b.go:5:2: imports "time" with a dot: name it, so its clock functions can be found`,
		`b.go:11:2: starts a goroutine`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("the check found\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// checkPurity reads the non-test Go files of dir and returns what in them
// breaks the rules of p, each as file:line:col: what.
func checkPurity(t *testing.T, dir string, p purity) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return strings.HasSuffix(n, "_test.go") })
	if len(names) == 0 {
		t.Fatalf("%s holds no Go files: the list of pure packages in this test is out of date", dir)
	}
	slices.Sort(names)
	fset := token.NewFileSet()
	var problems []string
	report := func(pos token.Pos, format string, a ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s", fset.Position(pos), fmt.Sprintf(format, a...)))
	}
	allowed := make([]string, len(p.cadre))
	for i, d := range p.cadre {
		allowed[i] = d
		if d == "" {
			allowed[i] = "the root package"
		}
	}
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		timeName := ""
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if why, ok := forbiddenImport(p.forbidden, path); ok {
				report(imp.Pos(), "imports %q: %s", path, why)
				continue
			}
			if path == module || strings.HasPrefix(path, module+"/") {
				rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
				if !slices.Contains(p.cadre, rel) {
					report(imp.Pos(), "imports %q, a cadre package outside the pure core (allowed: %s)", path, strings.Join(allowed, ", "))
				}
				continue
			}
			if path == "time" {
				switch {
				case imp.Name == nil:
					timeName = "time"
				case imp.Name.Name == ".":
					report(imp.Pos(), "imports \"time\" with a dot: name it, so its clock functions can be found")
				case imp.Name.Name != "_":
					timeName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				report(n.Pos(), "starts a goroutine")
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && timeName != "" && x.Name == timeName && clockFuncs[n.Sel.Name] {
					report(n.Pos(), "uses time.%s, which reads the clock or waits for it", n.Sel.Name)
				}
			}
			return true
		})
	}
	return problems
}

// forbiddenImport reports whether path is forbidden, and why.
func forbiddenImport(forbidden map[string]string, path string) (string, bool) {
	if why, ok := forbidden[path]; ok {
		return why, true
	}
	for prefix, why := range forbidden {
		if strings.HasSuffix(prefix, "/") && strings.HasPrefix(path, prefix) {
			return why, true
		}
	}
	return "", false
}
