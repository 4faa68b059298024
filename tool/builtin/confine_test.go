package builtin

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// confinedTree makes a workspace whose links lead inside, outside and
// nowhere, and a directory outside it holding a secret:
//
//	root/a/b.txt                          "inside"
//	root/in            -> root/a          directory link, inside
//	root/inlink.txt    -> root/a/b.txt    file link, inside
//	root/later         -> root/a/later.txt dangling, inside
//	root/out           -> outside         directory link, leaving
//	root/secret        -> outside/secret.txt
//	root/dangle        -> outside/none.txt dangling, leaving
//	root/reldangle     -> ../outside/new.txt dangling, relative, leaving
//	outside/secret.txt                    "SECRET"
func confinedTree(t *testing.T) (tools map[string]func(args map[string]any) (string, error), root, outside string) {
	t.Helper()
	ws, root, outside := newWorkspace(t)
	files(t, root, map[string]string{"a/b.txt": "inside\n"})
	files(t, outside, map[string]string{"secret.txt": "SECRET\n"})
	for _, l := range [][2]string{
		{filepath.Join(root, "a"), "in"},
		{filepath.Join(root, "a", "b.txt"), "inlink.txt"},
		{filepath.Join(root, "a", "later.txt"), "later"},
		{outside, "out"},
		{filepath.Join(outside, "secret.txt"), "secret"},
		{filepath.Join(outside, "none.txt"), "dangle"},
		{filepath.Join("..", "outside", "new.txt"), "reldangle"},
	} {
		symlink(t, l[0], filepath.Join(root, l[1]))
	}
	tools = map[string]func(map[string]any) (string, error){}
	for _, tl := range New(ws, Options{}) {
		tools[tl.Spec().Name] = func(args map[string]any) (string, error) { return call(t, tl, args) }
	}
	return tools, root, outside
}

// TestConfinement runs every file tool against paths that leave the
// workspace, by "..", as an absolute path and through symbolic links,
// and against links that stay inside.
func TestConfinement(t *testing.T) {
	escapes := []struct {
		name string
		path func(outside string) string
	}{
		{"traversal", func(string) string { return "../outside/secret.txt" }},
		{"traversal_deep", func(string) string { return "a/../../outside/secret.txt" }},
		{"absolute", func(outside string) string { return filepath.Join(outside, "secret.txt") }},
		{"absolute_dir", func(outside string) string { return outside }},
		{"symlink_file", func(string) string { return "secret" }},
		{"symlink_dir", func(string) string { return "out" }},
		{"through_symlink_dir", func(string) string { return "out/secret.txt" }},
		{"new_file_under_symlink_dir", func(string) string { return "out/sub/new.txt" }},
		{"dangling", func(string) string { return "dangle" }},
		{"dangling_relative", func(string) string { return "reldangle" }},
	}
	// args makes each tool's arguments for a path.
	args := map[string]func(p string) map[string]any{
		NameReadFile:    func(p string) map[string]any { return map[string]any{"path": p} },
		NameListFiles:   func(p string) map[string]any { return map[string]any{"path": p} },
		NameSearchFiles: func(p string) map[string]any { return map[string]any{"path": p, "pattern": "SECRET"} },
		NameWriteFile:   func(p string) map[string]any { return map[string]any{"path": p, "content": "pwned\n"} },
		NameEditFile: func(p string) map[string]any {
			return map[string]any{"path": p, "old_string": "SECRET", "new_string": "pwned"}
		},
	}
	for _, name := range slices.Sorted(maps.Keys(args)) {
		t.Run(name, func(t *testing.T) {
			tools, _, outside := confinedTree(t)
			for _, e := range escapes {
				t.Run(e.name, func(t *testing.T) {
					got, err := tools[name](args[name](e.path(outside)))
					if err == nil || !strings.Contains(err.Error(), "is outside the workspace root") {
						t.Fatalf("got %q, %v; want a refusal saying the path is outside the workspace root", got, err)
					}
					if !strings.HasPrefix(err.Error(), name+": ") {
						t.Errorf("error %q does not name the tool", err)
					}
					if strings.Contains(got+err.Error(), "SECRET") {
						t.Errorf("the secret leaked: %q, %v", got, err)
					}
				})
			}
			checkOutsideUntouched(t, outside)
		})
	}
}

func checkOutsideUntouched(t *testing.T, outside string) {
	t.Helper()
	var found []string
	err := filepath.WalkDir(outside, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(outside, p)
		found = append(found, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(found, []string{".", "secret.txt"}) {
		t.Errorf("outside the workspace now holds %v, want only secret.txt", found)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "SECRET\n" {
		t.Errorf("secret.txt holds %q, %v; want it unchanged", b, err)
	}
}

// TestConfinementLinksInside checks that links which stay in the
// workspace work, and that walking tools neither follow nor report what
// lies outside.
func TestConfinementLinksInside(t *testing.T) {
	tools, root, outside := confinedTree(t)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string
		file string // a file under root that must then hold content
	}{
		{name: "read_through_dir_link", tool: NameReadFile, args: map[string]any{"path": "in/b.txt"}, want: "     1\tinside\n"},
		{name: "read_file_link", tool: NameReadFile, args: map[string]any{"path": "inlink.txt"}, want: "     1\tinside\n"},
		{name: "list_dir_link", tool: NameListFiles, args: map[string]any{"path": "in"}, want: "a/b.txt\n"},
		{name: "list_all", tool: NameListFiles, args: map[string]any{},
			want: "a/b.txt\ninlink.txt\n\n(5 symbolic links leading outside the workspace or to nothing not listed)\n"},
		{name: "list_links_by_glob", tool: NameListFiles, args: map[string]any{"pattern": "*.txt"},
			want: "a/b.txt\ninlink.txt\n"},
		{name: "search_all", tool: NameSearchFiles, args: map[string]any{"pattern": "SECRET|inside"}, want: "a/b.txt:1: inside\n"},
		{name: "search_dir_link", tool: NameSearchFiles, args: map[string]any{"pattern": "inside", "path": "in"}, want: "a/b.txt:1: inside\n"},
		{name: "write_through_dir_link", tool: NameWriteFile, args: map[string]any{"path": "in/new.txt", "content": "n\n"},
			want: "created a/new.txt (2 bytes, 1 line)", file: "a/new.txt"},
		{name: "write_through_dangling_link_inside", tool: NameWriteFile, args: map[string]any{"path": "later", "content": "n\n"},
			want: "created a/later.txt (2 bytes, 1 line)", file: "a/later.txt"},
		{name: "edit_file_link", tool: NameEditFile, args: map[string]any{"path": "inlink.txt", "old_string": "inside", "new_string": "n"},
			want: "edited a/b.txt: replaced 1 line at line 1 with 1 line", file: "a/b.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tools[tt.tool](tt.args)
			checkResult(t, got, err, tt.want, "")
			if tt.file != "" {
				if b, err := os.ReadFile(filepath.Join(root, tt.file)); err != nil || string(b) != "n\n" {
					t.Errorf("%s holds %q, %v; want %q", tt.file, b, err, "n\n")
				}
			}
		})
	}
	// The links themselves are still links.
	for _, l := range []string{"in", "inlink.txt", "later"} {
		if fi, err := os.Lstat(filepath.Join(root, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link (%v)", l, err)
		}
	}
	checkOutsideUntouched(t, outside)
}
