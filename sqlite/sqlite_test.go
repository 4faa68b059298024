package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/sqlite"
	"github.com/cadre-ai/cadre/storetest"
)

func open(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) cadre.Store {
		return open(t, filepath.Join(t.TempDir(), "cadre.db"))
	})
}

func TestOpenCreatesDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", ".cadre", "cadre.db")
	s := open(t, path)
	defer s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database file was not created: %v", err)
	}
}

func TestOpenPathWithOddCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "my runs?#%20", "cadre 1.db")
	s := open(t, path)
	defer s.Close()
	if err := s.CreateRun(t.Context(), &cadre.RunRecord{ID: "r1", Started: time.Now()}); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database is not at %s: %v", path, err)
	}
}

// TestMigrationsFromEmpty checks the tables and the recorded version of a
// new database.
func TestMigrationsFromEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	open(t, path).Close()
	db := raw(t, path)
	var versions []int
	rows, err := db.Query(`SELECT version FROM schema_version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	rows.Close()
	if len(versions) != sqlite.SchemaVersion() || len(versions) == 0 || versions[len(versions)-1] != sqlite.SchemaVersion() {
		t.Errorf("schema_version holds %v, want 1..%d", versions, sqlite.SchemaVersion())
	}
	for _, table := range []string{"runs", "agents", "journal", "event_batches"} {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("table %s does not exist", table)
		}
	}
	var mode string
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode is %q, want wal", mode)
	}
	var page int
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&page); err != nil {
		t.Fatal(err)
	}
	if page != sqlite.PageSize {
		t.Errorf("page_size is %d, want %d", page, sqlite.PageSize)
	}
}

// TestMigrationsIdempotent reopens a database several times: the schema is
// applied once.
func TestMigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	for range 3 {
		open(t, path).Close()
	}
	var n int
	if err := raw(t, path).QueryRow(`SELECT count(*) FROM schema_version`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != sqlite.SchemaVersion() {
		t.Errorf("schema_version has %d rows after three opens, want %d", n, sqlite.SchemaVersion())
	}
}

func TestRefuseNewerSchema(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".cadre", "cadre.db")
	open(t, path).Close()
	newer := sqlite.SchemaVersion() + 4
	if _, err := raw(t, path).Exec(`INSERT INTO schema_version (version, applied) VALUES (?, '2031-01-01T00:00:00Z')`, newer); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	_, err := sqlite.Open(t.Context(), filepath.Join(".cadre", "cadre.db"))
	se, ok := errors.AsType[*sqlite.SchemaError](err)
	if !ok {
		t.Fatalf("Open of a newer database: got %v, want a *sqlite.SchemaError", err)
	}
	if se.Version != newer || se.Known != sqlite.SchemaVersion() {
		t.Errorf("SchemaError{Version: %d, Known: %d}, want {%d, %d}", se.Version, se.Known, newer, sqlite.SchemaVersion())
	}
	want := ".cadre/cadre.db was written by a newer cadre (schema " // then the numbers
	if msg := err.Error(); !strings.HasPrefix(msg, want) || !strings.Contains(msg, "upgrade cadre") {
		t.Errorf("error %q does not say which file, that it is newer, and what to do", msg)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	s := open(t, path)
	ctx := t.Context()
	run := &cadre.RunRecord{ID: "r1", Task: "keep me", Status: cadre.StatusRunning, Started: time.Now()}
	if err := s.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "root", Seq: 1, Kind: "start", Data: []byte(`{}`), Time: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	evs := []cadre.Event{{Type: cadre.EventRunStarted, Run: "r1", Time: time.Now()}}
	if err := s.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = open(t, path)
	defer s.Close()
	got, err := s.GetRun(ctx, "r1")
	if err != nil || got.Task != "keep me" {
		t.Errorf("after reopening, GetRun = %+v, %v", got, err)
	}
	if j, err := s.Journal(ctx, "r1", "root"); err != nil || len(j) != 1 {
		t.Errorf("after reopening, Journal = %+v, %v", j, err)
	}
	// Event numbering carries on where it stopped.
	more := []cadre.Event{{Type: cadre.EventSay, Run: "r1", Time: time.Now()}}
	if err := s.AppendEvents(ctx, more); err != nil {
		t.Fatal(err)
	}
	if more[0].Seq != 2 {
		t.Errorf("first event after reopening got Seq %d, want 2", more[0].Seq)
	}
}

// TestTwoStoresOneFile has two Stores, as two processes would, append to
// the same file at once.
func TestTwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	a, b := open(t, path), open(t, path)
	defer a.Close()
	defer b.Close()
	ctx := t.Context()
	if err := a.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for _, s := range []*sqlite.Store{a, b} {
		go func() {
			var err error
			for range 50 {
				if err = s.AppendEvents(ctx, []cadre.Event{{Type: cadre.EventSay, Run: "r1"}, {Type: cadre.EventSay, Run: "r1"}}); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
	}
	evs, err := b.Events(ctx, "r1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has Seq %d: two stores on one file must number events without gaps", i, e.Seq)
		}
	}
	if len(evs) != 200 {
		t.Errorf("%d events stored, want 200", len(evs))
	}
}

func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat("these are my notes, not a database\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(t.Context(), path)
	if err == nil {
		t.Fatal("Open of a text file succeeded, want an error")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a SQLite database") {
		t.Errorf("error %q does not say which file and what is wrong with it", err)
	}
}

func TestOpenEmptyPath(t *testing.T) {
	if _, err := sqlite.Open(t.Context(), ""); err == nil {
		t.Error("Open(\"\") succeeded, want an error")
	}
}

func TestOpenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cadre.db")); err == nil {
		s.Close()
		t.Error("Open with a cancelled context succeeded, want an error")
	}
}

// raw opens the database file directly, closing it at the end of the test.
func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// waitQueued waits until n writes are queued behind a held committer.
func waitQueued(s *sqlite.Store, n int) {
	for s.Queued() < n {
		runtime.Gosched()
	}
}

// TestGroupCommit queues writes while the committer is busy and checks
// that they share one transaction, and that the one that fails fails
// alone.
func TestGroupCommit(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cadre.db"))
	defer s.Close()
	ctx := t.Context()
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "root", Seq: 1, Kind: "start", Time: time.Now()}}); err != nil {
		t.Fatal(err)
	}

	release := s.Hold()
	before := s.Groups()
	const agents = 6
	errs := make([]error, agents+3)
	var wg sync.WaitGroup
	for i := range agents {
		wg.Go(func() {
			agent := cadre.RootID.Child("worker", i+1)
			errs[i] = s.Append(ctx, []cadre.JournalEntry{
				{Run: "r1", Agent: agent, Seq: 1, Kind: "start", Time: time.Now()},
				{Run: "r1", Agent: agent, Seq: 2, Kind: "model_result", Time: time.Now()},
			})
		})
	}
	// A batch holding an existing entry, one for a missing run, and events.
	wg.Go(func() {
		errs[agents] = s.Append(ctx, []cadre.JournalEntry{
			{Run: "r1", Agent: "root", Seq: 2, Kind: "model_result", Time: time.Now()},
			{Run: "r1", Agent: "root", Seq: 1, Kind: "start", Time: time.Now()},
		})
	})
	wg.Go(func() {
		errs[agents+1] = s.Append(ctx, []cadre.JournalEntry{{Run: "nope", Agent: "root", Seq: 1, Kind: "start", Time: time.Now()}})
	})
	evs := []cadre.Event{{Type: cadre.EventSay, Run: "r1"}, {Type: cadre.EventSay, Run: "r1"}}
	wg.Go(func() { errs[agents+2] = s.AppendEvents(ctx, evs) })
	waitQueued(s, agents+3)
	if err := release(); err != nil {
		t.Fatalf("the held write: %v", err)
	}
	wg.Wait()

	if got := s.Groups() - before; got != 2 {
		t.Errorf("%d transactions committed, want 2: the held write's, and one for the %d writes queued behind it", got, agents+3)
	}
	for i := range agents {
		if errs[i] != nil {
			t.Errorf("Append of worker %d failed although another write of its group failed: %v", i+1, errs[i])
		}
	}
	if errs[agents] == nil || !strings.Contains(errs[agents].Error(), "seq 1 exists already") {
		t.Errorf("Append of an existing entry: got %v, want an error naming seq 1", errs[agents])
	}
	if !errors.Is(errs[agents+1], cadre.ErrNotFound) {
		t.Errorf("Append for a missing run: got %v, want cadre.ErrNotFound", errs[agents+1])
	}
	if errs[agents+2] != nil || evs[0].Seq != 1 || evs[1].Seq != 2 {
		t.Errorf("AppendEvents in the group: err %v, seqs %d %d, want nil, 1 2", errs[agents+2], evs[0].Seq, evs[1].Seq)
	}
	if j, err := s.Journal(ctx, "r1", "root"); err != nil || len(j) != 1 {
		t.Errorf("root's journal holds %d entries (err %v), want 1: the failed batch was partly applied", len(j), err)
	}
	for i := range agents {
		agent := cadre.RootID.Child("worker", i+1)
		if j, err := s.Journal(ctx, "r1", agent); err != nil || len(j) != 2 {
			t.Errorf("journal of %s holds %d entries (err %v), want 2", agent, len(j), err)
		}
	}
}

// TestWriteWithdrawn cancels a write while it waits behind another: it
// fails with the context's error and is not written.
func TestWriteWithdrawn(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "cadre.db"))
	defer s.Close()
	if err := s.CreateRun(t.Context(), &cadre.RunRecord{ID: "r1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	release := s.Hold()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		errc <- s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "root", Seq: 1, Kind: "start", Time: time.Now()}})
	}()
	waitQueued(s, 1)
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Append cancelled while queued: got %v, want context.Canceled", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if j, err := s.Journal(t.Context(), "r1", "root"); err != nil || len(j) != 0 {
		t.Errorf("the withdrawn entry was written: journal %v, err %v", j, err)
	}
}

// TestClose checks that Close waits for queued writes, that writes after
// it fail with ErrClosed, and that a second Close is harmless.
func TestClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	s := open(t, path)
	ctx := t.Context()
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	release := s.Hold()
	errc := make(chan error, 1)
	go func() {
		errc <- s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "root", Seq: 1, Kind: "start", Time: time.Now()}})
	}()
	waitQueued(s, 1)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Errorf("a write queued before Close failed: %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r2", Started: time.Now()}); !errors.Is(err, sqlite.ErrClosed) {
		t.Errorf("CreateRun after Close: got %v, want sqlite.ErrClosed", err)
	}
	// A refused write names the agent it was for, kept with its journal or
	// not.
	w1 := &cadre.AgentRecord{Run: "r1", ID: "root/worker.1", Started: time.Now()}
	for name, err := range map[string]error{
		"AppendAgent": s.AppendAgent(ctx, w1, []cadre.JournalEntry{{Run: "r1", Agent: w1.ID, Seq: 1, Kind: "start", Time: time.Now()}}),
		"PutAgent":    s.PutAgent(ctx, w1),
	} {
		if !errors.Is(err, sqlite.ErrClosed) || !strings.Contains(err.Error(), `root/worker.1 of run "r1"`) || strings.Contains(err.Error(), "%s") {
			t.Errorf("%s after Close: %v, want sqlite.ErrClosed naming root/worker.1 of run r1", name, err)
		}
	}
	s = open(t, path)
	defer s.Close()
	if j, err := s.Journal(ctx, "r1", "root"); err != nil || len(j) != 1 {
		t.Errorf("after reopening, the entry written during Close is missing: %v, %v", j, err)
	}
}

// A SQLite database of another program is refused and left exactly as it
// was; a file that is not a database is refused; so is an empty file.
func TestOpenRefusesForeignDatabase(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "app.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE orders (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(other)
	_, err = sqlite.Open(t.Context(), other)
	var fe *sqlite.ForeignError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "is not a cadre store: it is a SQLite database of another program (tables orders, users, and none of cadre's)") {
		t.Fatalf("another program's database: %v", err)
	}
	after, _ := os.ReadFile(other)
	if !bytes.Equal(before, after) {
		t.Error("the other program's database was changed")
	}
	if _, err := os.Stat(other + "-wal"); err == nil {
		t.Error("a -wal file was made beside the other program's database")
	}

	junk := filepath.Join(dir, "notes.txt")
	os.WriteFile(junk, []byte("these are my notes, not a database, but long enough to have a header of sorts........."), 0o600)
	if _, err := sqlite.Open(t.Context(), junk); err == nil || !strings.Contains(err.Error(), "is not a SQLite database") {
		t.Errorf("a text file: %v", err)
	}

	// An empty file is not taken for a new store: a store that something
	// truncated would look like one that never held a run.
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	_, err = sqlite.Open(t.Context(), empty)
	if _, ok := errors.AsType[*sqlite.EmptyError](err); !ok || !strings.Contains(err.Error(), empty+" is empty (0 bytes)") ||
		!strings.Contains(err.Error(), "restore it from a backup") || !strings.Contains(err.Error(), "delete the file") {
		t.Fatalf("an empty file: %v, want an *EmptyError naming it and saying what to do", err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file was changed: %v %v", fi, err)
	}
	if _, err := os.Stat(empty + "-wal"); err == nil {
		t.Error("a -wal file was made beside the empty file")
	}
	os.Remove(empty)
	s, err := sqlite.Open(t.Context(), empty)
	if err != nil {
		t.Fatalf("once the empty file is deleted: %v", err)
	}
	s.Close()
}

// diedEnv makes the test binary the process of TestOpenAfterProcessDied
// that writes a run to the store it names, says so, and waits to be
// killed.
const diedEnv = "CADRE_SQLITE_TEST_DIE_IN"

func TestMain(m *testing.M) {
	if path := os.Getenv(diedEnv); path != "" {
		err := dieWriting(path)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("written")
		select {}
	}
	os.Exit(m.Run())
}

// dieWriting writes a run to a store, then begins to create a store the
// way cadre's first transaction on a new file does, in a second file of
// the same name with "-new" added: its changes spill to a rollback
// journal before the process dies in the middle of the transaction.
func dieWriting(path string) error {
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		return err
	}
	if err := s.CreateRun(context.Background(), &cadre.RunRecord{ID: "r1", Task: "the task", Status: cadre.StatusRunning, Started: time.Now().UTC()}); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", path+"-new")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{`PRAGMA cache_size = 1`, `BEGIN`, `CREATE TABLE schema_version (version INTEGER NOT NULL)`,
		`CREATE TABLE filler (x BLOB)`, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) INSERT INTO filler SELECT randomblob(4000) FROM n`} {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// Stores whose process was killed while it wrote open again: one in
// write-ahead-log mode, which keeps what was committed, and one killed
// while its first transaction was under way, whose rollback journal the
// next connection must play back before anything can read it.
func TestOpenAfterProcessDied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), diedEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if line != "written\n" {
		t.Fatalf("the process that writes the stores said %q", line)
	}
	if _, err := os.Stat(path + "-new-journal"); err != nil {
		t.Fatalf("the killed process left no rollback journal: %v", err)
	}
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("a store whose process was killed: %v", err)
	}
	defer s.Close()
	got, err := s.GetRun(t.Context(), "r1")
	if err != nil || got.Task != "the task" {
		t.Fatalf("the committed run: %+v, %v", got, err)
	}
	n, err := sqlite.Open(t.Context(), path+"-new")
	if err != nil {
		t.Fatalf("a store killed in its first transaction: %v", err)
	}
	defer n.Close()
	if err := n.CreateRun(t.Context(), &cadre.RunRecord{ID: "r2", Task: "after the crash", Status: cadre.StatusRunning, Started: time.Now().UTC()}); err != nil {
		t.Fatalf("a run in the store rolled back: %v", err)
	}
}

// Stores opened at once on a path where there is no database yet all
// open the same one: none sees the file empty or half made.
func TestOpenNewConcurrently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	const n = 6
	stores := make([]*sqlite.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = sqlite.Open(t.Context(), path) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	if err := stores[0].CreateRun(t.Context(), &cadre.RunRecord{ID: "r1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[n-1].GetRun(t.Context(), "r1"); err != nil {
		t.Errorf("a run written through one store is not seen through another: %v", err)
	}
	leftovers, _ := filepath.Glob(path + ".new-*")
	if len(leftovers) != 0 {
		t.Errorf("files left beside the database: %v", leftovers)
	}
}

// TestOpenDanglingLink opens a store path that is a symbolic link to a
// file that does not exist: the error names the link and its target, and
// nothing is made at either.
func TestOpenDanglingLink(t *testing.T) {
	dir := t.TempDir()
	for _, target := range []string{filepath.Join(dir, "elsewhere.db"), filepath.Join(dir, "gone", "x.db")} {
		link := filepath.Join(dir, "cadre.db")
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
		s, err := sqlite.Open(t.Context(), link)
		if err == nil {
			s.Close()
			t.Fatalf("Open(link to %s) succeeded, want an error", target)
		}
		if msg := err.Error(); !strings.Contains(msg, "symbolic link to "+target) || !strings.Contains(msg, "does not exist") {
			t.Errorf("Open(link to %s): error %q does not say the link points to nothing", target, msg)
		}
		if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open(link to %s) made something there: %v", target, err)
		}
	}
}

// TestCreateRemovesAbandoned leaves beside a new store's path what a
// process that died while creating it would leave, old and young: a new
// store removes the old files and keeps the young one (another process
// may be making it) and what is not its own: another store's, a name of
// the user's, a link.
func TestCreateRemovesAbandoned(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cadre.db")
	old := time.Now().Add(-2 * time.Hour)
	const made, young = "cadre.db.new-00112233aabbccdd", "cadre.db.new-4455667788990011"
	for _, name := range []string{made, made + "-wal", made + "-shm", young, "other.db.new-00112233aabbccdd", "cadre.db.new-backup"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if name != young {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A link with create's name is not create's: it stays, and so does
	// what it points to.
	target := filepath.Join(t.TempDir(), "kept")
	if err := os.WriteFile(target, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "cadre.db.new-8899aabbccddeeff")); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{"cadre.db", "cadre.db.new-4455667788990011", "cadre.db.new-8899aabbccddeeff", "cadre.db.new-backup", "other.db.new-00112233aabbccdd"}
	if !slices.Equal(left, want) {
		t.Errorf("files after Open: %q, want %q", left, want)
	}
}
