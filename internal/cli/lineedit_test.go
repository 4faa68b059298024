package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHistoryPath(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "state folder", env: map[string]string{"XDG_STATE_HOME": "/state", "HOME": "/home/u"}, want: "/state/cadre/chat_history"},
		{name: "home", env: map[string]string{"HOME": "/home/u"}, want: "/home/u/.local/state/cadre/chat_history"},
		{name: "relative state folder is ignored", env: map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/u"}, want: "/home/u/.local/state/cadre/chat_history"},
		{name: "off", env: map[string]string{"CADRE_HISTORY": "off", "HOME": "/home/u"}, want: ""},
		{name: "a file", env: map[string]string{"CADRE_HISTORY": "/tmp/h", "HOME": "/home/u"}, want: "/tmp/h"},
		{name: "a relative file", env: map[string]string{"CADRE_HISTORY": "h.txt"}, wantErr: "CADRE_HISTORY=h.txt: set it to off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &app{io: IO{Getenv: func(k string) string { return tt.env[k] }}}
			got, err := a.historyPath()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != filepath.FromSlash(tt.want) {
				t.Errorf("historyPath() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// The history file is cut to its last lines when opened, made private,
// ended if its last line was cut short, and does not get a line twice in
// a row.
func TestHistoryFile(t *testing.T) {
	t.Run("cut to the limit", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cadre", "chat_history")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i := range 15 {
			fmt.Fprintf(&b, "line %d\n\n", i)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		h, lines, err := openHistory(path, 10)
		if err != nil {
			t.Fatal(err)
		}
		defer h.close()
		var want []string
		for i := 5; i < 15; i++ {
			want = append(want, fmt.Sprintf("line %d", i))
		}
		if diff := cmp.Diff(want, lines); diff != "" {
			t.Errorf("lines (-want +got):\n%s", diff)
		}
		if err := h.add("line 14"); err != nil { // the last one again
			t.Fatal(err)
		}
		if err := h.add("line 15"); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if diff := cmp.Diff(strings.Join(append(want, "line 15"), "\n")+"\n", string(got)); diff != "" {
			t.Errorf("the file (-want +got):\n%s", diff)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v (%v), want 0600", fi.Mode(), err)
		}
	})
	t.Run("new, in a new folder", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "state", "cadre", "chat_history")
		h, lines, err := openHistory(path, 10)
		if err != nil {
			t.Fatal(err)
		}
		defer h.close()
		if len(lines) != 0 {
			t.Errorf("lines %q, want none", lines)
		}
		if err := h.add("first"); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != "first\n" {
			t.Errorf("the file holds %q", got)
		}
		for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
			}
		}
	})
	t.Run("last line cut short", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "chat_history")
		if err := os.WriteFile(path, []byte("one\ntw"), 0o600); err != nil {
			t.Fatal(err)
		}
		h, lines, err := openHistory(path, 10)
		if err != nil {
			t.Fatal(err)
		}
		defer h.close()
		if err := h.add("three"); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != "one\ntw\nthree\n" || !cmp.Equal(lines, []string{"one", "tw"}) {
			t.Errorf("lines %q, then the file %q", lines, got)
		}
	})
	t.Run("a folder in the way", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "chat_history")
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		_, _, err := openHistory(path, 10)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "CADRE_HISTORY=off") {
			t.Errorf("error %v, want one naming the file and how to turn history off", err)
		}
	})
	t.Run("a link in the way", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "profile")
		if err := os.WriteFile(target, []byte("export A=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "chat_history")
		if err := os.Symlink(target, path); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
		h, _, err := openHistory(path, 10)
		if err == nil {
			h.close()
		}
		if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "CADRE_HISTORY=off") {
			t.Errorf("error %v, want one saying the history file is a symbolic link", err)
		}
		got, _ := os.ReadFile(target)
		if fi, err := os.Stat(target); string(got) != "export A=1\n" || err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("the linked file was changed: %q, mode %v", got, fi.Mode().Perm())
		}
	})
}

func TestCommandCompleter(t *testing.T) {
	c := commandCompleter(chatCommands)
	tests := []struct {
		line string
		want []string
	}{
		{"/he", []string{"lp "}},
		{"/st", []string{"op "}},
		{"/", nil}, // several: none offered
		{"/help", []string{" "}},
		{"/x", nil},
		{"hello", nil},
		{"/stop root", nil},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			got, n := c.Do([]rune(tt.line), len([]rune(tt.line)))
			var rest []string
			for _, r := range got {
				rest = append(rest, string(r))
			}
			if !cmp.Equal(rest, tt.want) || (len(got) > 0 && n != len(tt.line)) {
				t.Errorf("Do(%q) = %q, %d; want %q, %d", tt.line, rest, n, tt.want, len(tt.line))
			}
		})
	}
}
