package agentdef

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Every file in testdata/golden is parsed, and the definition and the
// diagnostics are compared with the .json file beside it. Run with -update
// after a deliberate change and review the diff.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "golden", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".json") {
			continue
		}
		n++
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			def, diags := Parse(filepath.ToSlash(in), data, ParseOptions{Scope: ScopeProject, MCPServers: []string{"github"}})
			got, err := json.MarshalIndent(struct {
				Definition  *cadre.Definition `json:"definition"`
				Diagnostics []string          `json:"diagnostics"`
			}{def, diagStrings(diags)}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(in, filepath.Ext(in)) + ".json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("%s differs (-want +got):\n%s", golden, cmp.Diff(string(want), string(got)))
			}
		})
	}
	if n == 0 {
		t.Fatal("no inputs in testdata/golden")
	}
}

func diagStrings(diags []Diagnostic) []string {
	out := []string{}
	for _, d := range diags {
		out = append(out, d.String())
	}
	return out
}
