package yamlcheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/parser"
)

// bomb is a document whose anchors each repeat the one before ten times:
// levels of them stand for 10^levels values in a few hundred bytes.
func bomb(levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func check(t *testing.T, src string) error {
	t.Helper()
	f, err := parser.ParseBytes([]byte(src), 0)
	if err != nil {
		t.Fatal(err)
	}
	return Check(f)
}

// A document of a few hundred bytes that would expand to billions of
// values is refused, naming its first alias; one with a few aliases, and
// one with none, pass.
func TestCheck(t *testing.T) {
	src := bomb(9)
	if len(src) > 600 {
		t.Fatalf("the bomb has %d bytes", len(src))
	}
	err := check(t, src)
	e, ok := err.(*Error)
	if !ok || e.Line != 2 || !strings.Contains(err.Error(), "more than 100000 values") {
		t.Fatalf("error %v", err)
	}
	if err := check(t, bomb(3)); err != nil { // 10,000 values: within the limit
		t.Errorf("a modest document refused: %v", err)
	}
	for _, ok := range []string{
		"name: a\ntools: [Read, Grep]\n",
		"base: &b {model: x, effort: high}\nworker:\n  <<: *b\n  name: w\n",
		"tags: !!seq [a, b]\n",
		"",
	} {
		if err := check(t, ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
}
