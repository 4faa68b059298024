package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProtectedSwapRace checks that a write cannot be led into .git/hooks
// by a folder swapped for a symbolic link to it after the path was judged:
// while write_file and edit_file change files in root/d, a goroutine keeps
// exchanging d with a link to .git/hooks. Calls may fail; none may leave a
// file in .git/hooks or change one there.
func TestProtectedSwapRace(t *testing.T) {
	if testing.Short() {
		t.Skip("the swap race makes hundreds of calls")
	}
	ws, root, _ := newWorkspace(t)
	const calls = 400
	in := map[string]string{".git/hooks/pre-commit": "#!/bin/sh\nexit 0\n"}
	for i := range calls {
		in[fmt.Sprintf("d/e-%d", i)] = "alpha\n"
	}
	files(t, root, in)
	// The files edit_file would meet through the link.
	for i := range calls {
		files(t, root, map[string]string{fmt.Sprintf(".git/hooks/e-%d", i): "alpha\n"})
	}
	symlink(t, ".git/hooks", filepath.Join(root, "d.swap"))
	d, swap := filepath.Join(root, "d"), filepath.Join(root, "d.swap")
	exchange := func() error { return unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE) }
	if err := exchange(); err != nil {
		t.Skipf("renameat2 RENAME_EXCHANGE unavailable: %v", err)
	}
	if err := exchange(); err != nil {
		t.Fatal(err)
	}
	tools := New(ws, Options{})
	write, edit := tools[3], tools[4]

	stop := make(chan struct{})
	swapped := make(chan error, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				if n%2 == 1 {
					swapped <- exchange() // leave the real folder at d
					return
				}
				swapped <- nil
				return
			default:
			}
			if err := exchange(); err != nil {
				swapped <- err
				return
			}
			n++
		}
	}()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < calls; i += 4 {
				_, _ = call(t, write, map[string]any{"path": fmt.Sprintf("d/w-%d", i), "content": "written\n"})
				_, _ = call(t, edit, map[string]any{"path": fmt.Sprintf("d/e-%d", i), "old_string": "alpha", "new_string": "edited"})
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-swapped; err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, ".git", "hooks"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		b, err := os.ReadFile(filepath.Join(root, ".git", "hooks", name))
		switch {
		case err != nil:
			t.Errorf(".git/hooks/%s: %v", name, err)
		case name == "pre-commit" && string(b) == "#!/bin/sh\nexit 0\n":
		case len(name) > 2 && name[:2] == "e-" && string(b) == "alpha\n":
		default:
			t.Errorf("a write reached .git/hooks/%s: %q", name, b)
		}
	}
}
