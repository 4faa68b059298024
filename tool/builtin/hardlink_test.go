package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hardLinkTree makes a workspace holding door.txt, a hard link to
// outside/secret.txt, and plain.txt, a file of its own.
func hardLinkTree(t *testing.T, opts Options) (tools map[string]func(map[string]any) (string, error), root, outside string) {
	t.Helper()
	ws, root, outside := newWorkspace(t)
	files(t, root, map[string]string{"plain.txt": "plain SECRET-free\n"})
	files(t, outside, map[string]string{"secret.txt": "SECRET\n"})
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(root, "door.txt")); err != nil {
		t.Skipf("hard links unavailable: %v", err)
	}
	tools = map[string]func(map[string]any) (string, error){}
	for _, tl := range New(ws, opts) {
		tools[tl.Spec().Name] = func(args map[string]any) (string, error) { return call(t, tl, args) }
	}
	return tools, root, outside
}

// TestHardLinksRefused checks that a file with a second name, which may
// lie outside the workspace, is neither read, searched, written nor
// edited, and that the refusal says why and how to allow it.
func TestHardLinksRefused(t *testing.T) {
	tests := []struct {
		name string
		tool string
		args map[string]any
		did  string
	}{
		{name: "read", tool: NameReadFile, args: map[string]any{"path": "door.txt"}, did: "is not read"},
		{name: "search_file", tool: NameSearchFiles, args: map[string]any{"path": "door.txt", "pattern": "SECRET"}, did: "is not searched"},
		{name: "write", tool: NameWriteFile, args: map[string]any{"path": "door.txt", "content": "pwned\n"}, did: "is not changed"},
		{name: "edit", tool: NameEditFile, args: map[string]any{"path": "door.txt", "old_string": "SECRET", "new_string": "pwned"}, did: "is not changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools, _, outside := hardLinkTree(t, Options{})
			got, err := tools[tt.tool](tt.args)
			if err == nil {
				t.Fatalf("got %q; want a refusal", got)
			}
			var hl *HardLinkError
			if !errors.As(err, &hl) || hl.Links != 2 || hl.Path != "door.txt" || hl.Tool != tt.tool {
				t.Errorf("error %v (%T) is not a HardLinkError for door.txt with 2 links", err, err)
			}
			msg := err.Error()
			for _, want := range []string{tt.tool + ": door.txt has 2 hard links", "outside the workspace", tt.did, "allowHardLinks: true under files:"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not contain %q", msg, want)
				}
			}
			if strings.Contains(got+msg, "SECRET\n") || strings.Contains(got, "SECRET") {
				t.Errorf("the secret leaked: %q, %v", got, err)
			}
			if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "SECRET\n" {
				t.Errorf("outside secret.txt holds %q, %v; want it unchanged", b, err)
			}
		})
	}
}

// TestHardLinksSkippedBySearch checks that a search of a directory passes
// over a file with several links and says so.
func TestHardLinksSkippedBySearch(t *testing.T) {
	tools, _, _ := hardLinkTree(t, Options{})
	got, err := tools[NameSearchFiles](map[string]any{"pattern": "SECRET"})
	checkResult(t, got, err, "plain.txt:1: plain SECRET-free\n\n"+
		"(not searched: 1 file with more than one hard link, which may be a door to a file outside the workspace: door.txt; "+
		"the user can allow such files with allowHardLinks: true under files: in .cadre/config.yaml)\n", "")
	got, err = tools[NameSearchFiles](map[string]any{"pattern": "^SECRET$"})
	checkResult(t, got, err, `no matches for "^SECRET$" under .`+"\n"+
		"(not searched: 1 file with more than one hard link, which may be a door to a file outside the workspace: door.txt; "+
		"the user can allow such files with allowHardLinks: true under files: in .cadre/config.yaml)\n", "")
}

// TestHardLinksAllowed checks that Options.AllowHardLinks lets every tool
// use such a file, and that writes go to the file itself, so both of its
// names see them.
func TestHardLinksAllowed(t *testing.T) {
	tools, root, outside := hardLinkTree(t, Options{AllowHardLinks: true})
	got, err := tools[NameReadFile](map[string]any{"path": "door.txt"})
	checkResult(t, got, err, "     1\tSECRET\n", "")
	got, err = tools[NameSearchFiles](map[string]any{"pattern": "^SECRET"})
	checkResult(t, got, err, "door.txt:1: SECRET\n", "")
	got, err = tools[NameSearchFiles](map[string]any{"pattern": "^SECRET", "path": "door.txt"})
	checkResult(t, got, err, "door.txt:1: SECRET\n", "")
	got, err = tools[NameEditFile](map[string]any{"path": "door.txt", "old_string": "SECRET", "new_string": "edited"})
	checkResult(t, got, err, "edited door.txt: replaced 1 line at line 1 with 1 line", "")
	if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "edited\n" {
		t.Errorf("after edit_file, the other name holds %q, %v; want the edit", b, err)
	}
	got, err = tools[NameWriteFile](map[string]any{"path": "door.txt", "content": "written\n"})
	checkResult(t, got, err, "replaced door.txt (8 bytes, 1 line)", "")
	if b, err := os.ReadFile(filepath.Join(outside, "secret.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("after write_file, the other name holds %q, %v; want the new content", b, err)
	}
	a, err1 := os.Stat(filepath.Join(root, "door.txt"))
	b, err2 := os.Stat(filepath.Join(outside, "secret.txt"))
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		t.Errorf("door.txt and secret.txt are no longer one file (%v, %v)", err1, err2)
	}
}
