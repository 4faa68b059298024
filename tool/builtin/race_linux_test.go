package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cadre-ai/cadre"
)

// Attempts of each kind TestSwapRace makes.
const (
	raceReads    = 4800
	raceWrites   = 1200
	raceEdits    = 1200
	raceLists    = 600
	raceSearches = 600
	raceWorkers  = 8
)

// TestSwapRace attacks the file tools as a process sharing the workspace
// could: while thousands of calls go through root/d, a goroutine keeps
// exchanging that directory with a symbolic link to a directory outside
// the workspace (renameat2 with RENAME_EXCHANGE, so that root/d always
// exists and is sometimes the link). A call may fail while the link is in
// place, but none may read, list, search, write or edit anything outside.
func TestSwapRace(t *testing.T) {
	if testing.Short() {
		t.Skip("the swap race makes thousands of calls")
	}
	ws, root, outside := newWorkspace(t)
	in := map[string]string{"d/f.txt": "INSIDE\n", "d/sub/a.txt": "INSIDE\n", "d/sub/deep/b.txt": "INSIDE\n"}
	out := map[string]string{
		"f.txt": "OUTSIDE-SECRET\n", "only-outside.txt": "OUTSIDE-SECRET\n",
		"sub/a.txt": "OUTSIDE-SECRET\n", "sub/only-outside.txt": "OUTSIDE-SECRET\n",
		"sub/deep/b.txt": "OUTSIDE-SECRET\n", "sub/deep/only-outside.txt": "OUTSIDE-SECRET\n",
	}
	for i := range raceEdits {
		in[fmt.Sprintf("d/e-%d.txt", i)] = "alpha\n"
		out[fmt.Sprintf("e-%d.txt", i)] = "alpha\nOUTSIDE-SECRET\n"
	}
	files(t, root, in)
	files(t, outside, out)
	symlink(t, outside, filepath.Join(root, "d.swap"))
	d, swap := filepath.Join(root, "d"), filepath.Join(root, "d.swap")
	if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2 RENAME_EXCHANGE unavailable: %v", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}

	byName := map[string]cadre.Tool{}
	for _, tl := range New(ws, Options{}) {
		byName[tl.Spec().Name] = tl
	}
	type job struct {
		kind string
		tool string
		args map[string]any
	}
	var jobs []job
	add := func(n int, kind, tool string, args func(i int) map[string]any) {
		for i := range n {
			jobs = append(jobs, job{kind, tool, args(i)})
		}
	}
	add(raceReads, "read", NameReadFile, func(int) map[string]any { return map[string]any{"path": "d/f.txt"} })
	add(raceWrites, "write", NameWriteFile, func(i int) map[string]any {
		return map[string]any{"path": fmt.Sprintf("d/w-%d.txt", i), "content": "written\n"}
	})
	add(raceEdits, "edit", NameEditFile, func(i int) map[string]any {
		return map[string]any{"path": fmt.Sprintf("d/e-%d.txt", i), "old_string": "alpha", "new_string": "edited"}
	})
	add(raceLists, "list", NameListFiles, func(int) map[string]any { return map[string]any{"path": "d/sub"} })
	add(raceSearches, "search", NameSearchFiles, func(int) map[string]any { return map[string]any{"path": "d/sub", "pattern": "."} })
	// Mix the kinds so that every kind meets the swapper.
	mixed := slices.Clone(jobs)
	rand.New(rand.NewPCG(13, 13)).Shuffle(len(mixed), func(i, j int) { mixed[i], mixed[j] = mixed[j], mixed[i] })

	var swaps atomic.Int64
	stop := make(chan struct{})
	swapped := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				// Leave the real directory at root/d.
				if n := swaps.Load(); n%2 == 1 {
					swapped <- unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE)
					return
				}
				swapped <- nil
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
				swapped <- err
				return
			}
			swaps.Add(1)
		}
	}()

	// ok and refused count calls by their outcome; shown counts those
	// whose result showed something from outside, landed the writes and
	// edits that changed something outside.
	type tally struct{ ok, refused, shown, landed int }
	var (
		mu     sync.Mutex
		counts = map[string]*tally{}
		next   atomic.Int64
		wg     sync.WaitGroup
	)
	for _, k := range []string{"read", "write", "edit", "list", "search"} {
		counts[k] = &tally{}
	}
	do := func(j job) {
		raw, err := json.Marshal(j.args)
		if err != nil {
			t.Error(err)
			return
		}
		got, err := byName[j.tool].Call(context.Background(), raw)
		text := got
		if err != nil {
			text = err.Error()
		}
		mu.Lock()
		c := counts[j.kind]
		switch {
		case strings.Contains(text, "OUTSIDE-SECRET") || strings.Contains(text, "only-outside"):
			c.shown++
		case err != nil:
			c.refused++
		default:
			c.ok++
		}
		mu.Unlock()
	}
	run := func(list []job) {
		next.Store(0)
		for range raceWorkers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(list) {
						return
					}
					do(list[i])
				}
			})
		}
		wg.Wait()
	}
	run(mixed)
	// On a busy machine the swapper can win every call of a kind (a
	// search walks a tree); such a kind is given more calls, still racing,
	// so that each kind is seen to go through the directory.
	for range 4 {
		var again []job
		for _, j := range jobs {
			if counts[j.kind].ok == 0 {
				again = append(again, j)
			}
		}
		if len(again) == 0 {
			break
		}
		run(again)
	}
	close(stop)
	if err := <-swapped; err != nil {
		t.Fatalf("swapping: %v", err)
	}

	// What landed outside: a new w-N.txt is an escaped write, a changed
	// e-N.txt an escaped edit.
	err := filepath.WalkDir(outside, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name, _ := filepath.Rel(outside, p)
		want, ok := out[name]
		switch {
		case !ok && strings.HasPrefix(name, "w-"):
			counts["write"].landed++
		case !ok:
			t.Errorf("outside the workspace: %s appeared", name)
		default:
			b, err := os.ReadFile(p)
			if err == nil && string(b) == want {
				return nil
			}
			if strings.HasPrefix(name, "e-") {
				counts["edit"].landed++
			} else {
				t.Errorf("outside %s holds %q, %v; want it unchanged", name, b, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d swaps", swaps.Load())
	for _, k := range []string{"read", "write", "edit", "list", "search"} {
		c := counts[k]
		t.Logf("%-6s %4d calls: %4d succeeded, %4d refused, %d showed outside content, %d changed a file outside",
			k, c.ok+c.refused+c.shown, c.ok, c.refused, c.shown, c.landed)
		if c.shown+c.landed > 0 {
			t.Errorf("%s: %d calls reached outside the workspace", k, c.shown+c.landed)
		}
		if c.ok == 0 {
			t.Errorf("%s: no call succeeded, so the race was not run through the directory", k)
		}
	}
	// No temporary file of an atomic write is left behind.
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("a temporary file was left behind: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every edit that succeeded changed a file inside.
	edited := 0
	for i := range raceEdits {
		if b, err := os.ReadFile(filepath.Join(root, "d", fmt.Sprintf("e-%d.txt", i))); err == nil && string(b) == "edited\n" {
			edited++
		}
	}
	if edited < counts["edit"].ok {
		t.Errorf("%d edits succeeded but only %d files inside were edited", counts["edit"].ok, edited)
	}
}
