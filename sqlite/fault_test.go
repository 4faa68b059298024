package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/sqlite"
)

// delegation is a run whose root hands its task to a helper and answers
// with the helper's report. before, when set, is called as the helper's
// first reply is made, before the engine journals it.
type delegation struct {
	before func()
	once   sync.Once
}

func (d *delegation) model() cadre.Model {
	return scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		call := func(name string, args map[string]string) *cadre.Response {
			b, _ := json.Marshal(args)
			return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, ToolCalls: []cadre.ToolCall{{ID: fmt.Sprintf("c%d", req.Turn), Name: name, Arguments: string(b)}}}}
		}
		text := func(s string) *cadre.Response {
			return &cadre.Response{Message: cadre.Message{Role: cadre.RoleAssistant, Content: s}}
		}
		if req.Agent == cadre.RootID {
			if req.Turn == 1 {
				return call(loop.ToolSpawnAgent, map[string]string{"agent": "helper", "task": "find it"}), nil
			}
			return text("the answer: " + req.Messages[len(req.Messages)-1].Content[:20]), nil
		}
		if req.Turn == 1 {
			if d.before != nil {
				d.once.Do(d.before)
			}
			// Big enough to need new pages in the database.
			return call(loop.ToolSendAgentMessage, map[string]string{"text": "found it " + strings.Repeat("and more ", 20_000)}), nil
		}
		return text("done"), nil
	})
}

func delegationConfig(s cadre.Store, m cadre.Model) local.Config {
	return local.Config{
		Models: local.OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: s,
		Definitions: []*cadre.Definition{{Name: "helper", Description: "helps", Prompt: "You help.", Visibility: cadre.VisibilityUserFacing}},
	}
}

// runFails starts the delegation and returns the reason it failed for.
func runFails(t *testing.T, cfg local.Config) (id, reason string) {
	t.Helper()
	e := local.New(cfg)
	id, err := e.Start(context.Background(), "find it", cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Wait(context.Background(), id)
	re, ok := errors.AsType[*cadre.RunError](err)
	if !ok || res.Status != cadre.StatusFailed {
		t.Fatalf("the run: %v, status %s; want it failed", err, res.Status)
	}
	return id, re.Reason
}

// resumeCompletes resumes the run with a store that works again and
// checks that it ends with the helper's report.
func resumeCompletes(t *testing.T, s cadre.Store, id string) {
	t.Helper()
	e := local.New(delegationConfig(s, (&delegation{}).model()))
	if err := e.Resume(context.Background(), id); err != nil {
		t.Fatalf("resume: %v", err)
	}
	res, err := e.Wait(context.Background(), id)
	if err != nil || !strings.HasPrefix(res.Answer, "the answer: ") {
		t.Fatalf("the resumed run: %v, status %s", err, res.Status)
	}
	if rec, err := s.GetRun(context.Background(), id); err != nil || rec.Status != cadre.StatusDone {
		t.Errorf("the resumed run's record: %+v %v", rec, err)
	}
}

// A database that fills up during a run stops the run: it fails, saying
// the database is full and how to carry the run on, its record still says
// running, and once there is room a resume completes it.
func TestRunStopsOnFullDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	s := open(t, path)
	defer s.Close()
	d := &delegation{before: func() {
		if err := s.SetMaxPages(1); err != nil { // as big as it is now
			t.Error(err)
		}
	}}
	id, reason := runFails(t, delegationConfig(s, d.model()))
	t.Logf("the run failed: %s", reason)
	for _, want := range []string{"store failed", path + " is full", "Free some space", "cadre resume " + id} {
		if !strings.Contains(reason, want) {
			t.Errorf("the reason lacks %q", want)
		}
	}
	if rec, err := s.GetRun(context.Background(), id); err != nil || rec.Status != cadre.StatusRunning {
		t.Errorf("the stopped run's record: %+v %v; want it running, for a resume", rec, err)
	}
	if err := s.SetMaxPages(1 << 30); err != nil {
		t.Fatal(err)
	}
	resumeCompletes(t, s, id)
}

// A database that another program keeps locked for longer than the store
// waits stops the run, with a message naming the file and saying that
// another program holds it; once it lets go, a resume completes the run.
func TestRunStopsOnLockedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	s, err := sqlite.OpenBusy(t.Context(), path, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var (
		conn   *sql.Conn
		unlock sync.Once
	)
	release := func() {
		unlock.Do(func() {
			if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
				t.Error(err)
			}
			conn.Close()
		})
	}
	d := &delegation{before: func() {
		var err error
		if conn, err = other.Conn(context.Background()); err == nil {
			_, err = conn.ExecContext(context.Background(), `BEGIN EXCLUSIVE`)
		}
		if err != nil {
			t.Error(err)
		}
	}}
	cfg := delegationConfig(s, d.model())
	// The other program lets go as the run ends, so that the run can
	// release its lease.
	cfg.Observer = observer(func(ev cadre.Event) {
		if ev.Type == cadre.EventRunFailed {
			release()
		}
	})
	id, reason := runFails(t, cfg)
	release()
	t.Logf("the run failed: %s", reason)
	for _, want := range []string{"store failed", path + " is locked by another program", "cadre resume " + id} {
		if !strings.Contains(reason, want) {
			t.Errorf("the reason lacks %q", want)
		}
	}
	resumeCompletes(t, s, id)
}

type observer func(cadre.Event)

func (o observer) StartAgent(ctx context.Context, _ string, _ cadre.AgentInfo, _ bool) context.Context {
	return ctx
}
func (o observer) Event(ev cadre.Event) { o(ev) }

// A database in a folder cadre may not write is refused when it is opened,
// naming it.
func TestOpenReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write files and folders whatever their permissions")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "cadre.db")
	open(t, path).Close()
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(t.Context(), path)
	if _, ok := errors.AsType[*sqlite.FaultError](err); !ok || !strings.Contains(err.Error(), path+" cannot be written") {
		t.Errorf("a read-only database: %v, want a *FaultError saying it cannot be written", err)
	}
	t.Logf("%v", err)
	// A database that may be written in a folder that may not: SQLite
	// cannot make the -wal file beside it.
	os.Chmod(path, 0o600)
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(t.Context(), path)
	if _, ok := errors.AsType[*sqlite.FaultError](err); !ok || !strings.Contains(err.Error(), path) {
		t.Errorf("a database in a read-only folder: %v, want a *FaultError naming it", err)
	}
	t.Logf("%v", err)
	os.Chmod(dir, 0o700)
	os.Remove(path)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	if _, err := sqlite.Open(t.Context(), path); err == nil || !strings.Contains(err.Error(), path+" cannot be created") {
		t.Errorf("a new database in a read-only folder: %v, want an error naming it", err)
	} else {
		t.Logf("%v", err)
	}
}

// A write that finds the database locked past the busy timeout fails
// after waiting once: the group it is in is not tried again write by
// write, which would wait as long again.
func TestLockedWaitsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.db")
	s, err := sqlite.OpenBusy(t.Context(), path, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateRun(t.Context(), &cadre.RunRecord{ID: "r1", Status: cadre.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	retried := s.Retried()
	err = s.Append(t.Context(), []cadre.JournalEntry{{Run: "r1", Agent: cadre.RootID, Seq: 1, Kind: "start", Data: json.RawMessage(`{}`)}})
	if err == nil || !strings.Contains(err.Error(), "is locked by another program") {
		t.Fatalf("Append on a locked database: %v, want it refused as locked", err)
	}
	if got := s.Retried() - retried; got != 0 {
		t.Errorf("the locked write was tried again write by write %d times, want 0", got)
	}
}
