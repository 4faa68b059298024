package cadre_test

import (
	"testing"

	"github.com/cadre-ai/cadre"
)

func TestIsAncestorOf(t *testing.T) {
	for _, c := range []struct {
		id, other cadre.AgentID
		want      bool
	}{
		{"root", "root", false},
		{"root", "root/a.1", true},
		{"root", "root/a.1/b.2", true},
		{"root/a.1", "root/a.1/b.2", true},
		{"root/a.1", "root/a.10", false},
		{"root/a.1", "root/a.1", false},
		{"root/a.1/b.2", "root/a.1", false},
		{"root", "rootx/a.1", false},
		{"", "/a", true},
		{"", "", false},
	} {
		if got := c.id.IsAncestorOf(c.other); got != c.want {
			t.Errorf("%q.IsAncestorOf(%q) = %t, want %t", c.id, c.other, got, c.want)
		}
	}
}
