package postgres_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/pgtest"
	"github.com/cadre-ai/cadre/postgres"
	"github.com/cadre-ai/cadre/storetest"
)

// serverDSN returns the test server's connection string. Without one it
// skips the test, unless CADRE_REQUIRE_POSTGRES=1 (or CI=true) says the
// PostgreSQL tests must run: then it fails it.
func serverDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("CADRE_TEST_POSTGRES")
	if dsn == "" {
		const how = "CADRE_TEST_POSTGRES is not set: to run the PostgreSQL tests, `source .ci/postgres.sh` (it starts a throwaway server and sets it) or set it to a postgres:// URL of a database the tests may create schemas in"
		if required() {
			t.Fatal(how + "; CADRE_REQUIRE_POSTGRES=1 (or CI=true) says these tests must not be skipped")
		}
		t.Skip(how)
	}
	return dsn
}

func required() bool {
	return os.Getenv("CADRE_REQUIRE_POSTGRES") == "1" || os.Getenv("CI") == "true"
}

// TestRequiredServer fails when the PostgreSQL tests must run and cannot,
// so that a missing server is reported once by name, whatever -run selects.
func TestRequiredServer(t *testing.T) {
	if !required() {
		t.Skip("CADRE_REQUIRE_POSTGRES is not 1: the PostgreSQL tests may be skipped here")
	}
	serverDSN(t)
}

// TestRequireFailsWithoutServer runs this test binary with
// CADRE_REQUIRE_POSTGRES=1 and no server, and checks that the tests fail
// rather than skip.
func TestRequireFailsWithoutServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the test binary again")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^(TestRequiredServer|TestConformance)$", "-test.v")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CADRE_TEST_POSTGRES=") && !strings.HasPrefix(kv, "CADRE_REQUIRE_POSTGRES=") && !strings.HasPrefix(kv, "CI=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "CADRE_REQUIRE_POSTGRES=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("with CADRE_REQUIRE_POSTGRES=1 and no CADRE_TEST_POSTGRES the tests passed:\n%s", out)
	}
	for _, name := range []string{"TestRequiredServer", "TestConformance"} {
		if !strings.Contains(string(out), "--- FAIL: "+name+" ") {
			t.Errorf("%s did not fail with CADRE_REQUIRE_POSTGRES=1 and no server:\n%s", name, out)
		}
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Errorf("a test skipped with CADRE_REQUIRE_POSTGRES=1:\n%s", out)
	}
}

// schemaDSN creates a schema of its own for the test, dropped at its end,
// and returns a connection string whose search_path names it.
func schemaDSN(t testing.TB) (dsn, schema string) {
	t.Helper()
	return pgtest.Schema(t, serverDSN(t), "cadre_test")
}

func open(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	serverDSN(t)
	storetest.Run(t, func(t *testing.T) cadre.Store {
		dsn, _ := schemaDSN(t)
		return open(t, dsn)
	})
}

func TestMigrationsFromEmpty(t *testing.T) {
	dsn, schema := schemaDSN(t)
	open(t, dsn).Close()
	open(t, dsn).Close() // a second open applies nothing
	ctx := t.Context()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n, top int
	if err := c.QueryRow(ctx, `SELECT count(*), max(version) FROM schema_version`).Scan(&n, &top); err != nil {
		t.Fatal(err)
	}
	if n != postgres.SchemaVersion() || top != postgres.SchemaVersion() {
		t.Errorf("schema_version has %d rows up to %d, want 1..%d", n, top, postgres.SchemaVersion())
	}
	for _, table := range []string{"runs", "agents", "journal", "event_batches"} {
		var ok bool
		if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2)`, schema, table).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("table %s.%s does not exist", schema, table)
		}
	}
}

// TestConcurrentOpen has several stores open a new schema at once: one
// migrates, the others wait and find it done.
func TestConcurrentOpen(t *testing.T) {
	dsn, _ := schemaDSN(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := postgres.Open(context.Background(), dsn)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("Open: %v", err)
		}
	}
}

func TestRefuseNewerSchema(t *testing.T) {
	dsn, schema := schemaDSN(t)
	open(t, dsn).Close()
	ctx := t.Context()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	newer := postgres.SchemaVersion() + 4
	_, err = c.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, newer)
	c.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, dsn)
	se, ok := errors.AsType[*postgres.SchemaError](err)
	if !ok {
		t.Fatalf("Open of a newer schema: got %v, want a *postgres.SchemaError", err)
	}
	if se.Version != newer || se.Known != postgres.SchemaVersion() || se.Schema != schema {
		t.Errorf("got %+v, want Version %d, Known %d, Schema %s", se, newer, postgres.SchemaVersion(), schema)
	}
	if msg := err.Error(); !strings.Contains(msg, "newer cadre") || !strings.Contains(msg, "upgrade cadre") || !strings.Contains(msg, schema) {
		t.Errorf("error %q does not say where, that it is newer, and what to do", msg)
	}
}

func TestReopenKeepsData(t *testing.T) {
	dsn, _ := schemaDSN(t)
	ctx := t.Context()
	s := open(t, dsn)
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Task: "keep me", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvents(ctx, []cadre.Event{{Type: cadre.EventRunStarted, Run: "r1"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dsn)
	defer s.Close()
	if r, err := s.GetRun(ctx, "r1"); err != nil || r.Task != "keep me" {
		t.Errorf("after reopening, GetRun = %+v, %v", r, err)
	}
	more := []cadre.Event{{Type: cadre.EventSay, Run: "r1"}}
	if err := s.AppendEvents(ctx, more); err != nil {
		t.Fatal(err)
	}
	if more[0].Seq != 2 {
		t.Errorf("first event after reopening got Seq %d, want 2", more[0].Seq)
	}
}

func TestOpenMissingSchema(t *testing.T) {
	dsn, err := pgtest.WithSearchPath(serverDSN(t), "cadre_no_such_schema")
	if err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(t.Context(), dsn)
	if err == nil {
		t.Fatal("Open with a search_path naming no schema succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "search_path") {
		t.Errorf("error %q does not point at the search_path", err)
	}
}

func TestOpenBadDSN(t *testing.T) {
	for _, tc := range []struct{ name, dsn string }{
		{"Unparsable", "postgres://a b@:x/"},
		{"NoServer", "postgres://cadre@127.0.0.1:1/cadre?sslmode=disable&connect_timeout=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.Open(t.Context(), tc.dsn)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tc.dsn)
			}
			if !strings.HasPrefix(err.Error(), "postgres: ") {
				t.Errorf("error %q does not say it comes from the PostgreSQL store", err)
			}
		})
	}
}

// TestParseErrorHidesPassword gives Open connection strings that cannot be
// parsed, with a password in each form libpq accepts, among them those
// pgx's own message shows; no error may contain the password.
func TestParseErrorHidesPassword(t *testing.T) {
	for _, tc := range []struct{ dsn, why string }{
		{"host=db password = s3cr3t port=bad", "invalid port"},
		{`host=db password=s3\ cr3t port=bad`, "invalid port"},
		{"host=db password='s3 cr3t' port=bad", "invalid port"},
		{"postgres://u:s3@cr3t@db:bad/cadre", "invalid port"},
		{"postgres://u:s3cr3t@db/cadre?password=cr3t&sslmode=bogus", "sslmode is invalid"},
		{"host=db password='s3cr3t", "unterminated quoted string"},
		{"host=db password=my cr3t port=5432", `missing … after …`},
		{"postgres://u:p@db/x?mycr3t", "missing key/value separator"},
	} {
		s, err := postgres.Open(t.Context(), tc.dsn)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%q) succeeded, want an error", tc.dsn)
		}
		msg := err.Error()
		if strings.Contains(msg, "cr3t") {
			t.Errorf("Open(%q): the error shows the password: %s", tc.dsn, msg)
		}
		if !strings.Contains(msg, tc.why) || !strings.HasPrefix(msg, "postgres: the connection string is not valid") {
			t.Errorf("Open(%q): error %q does not say %q", tc.dsn, msg, tc.why)
		}
	}
}

// TestLargeBatchErrorNamesEntry checks that a batch written with COPY
// reports a duplicate as precisely as a small one.
func TestLargeBatchErrorNamesEntry(t *testing.T) {
	dsn, _ := schemaDSN(t)
	s := open(t, dsn)
	defer s.Close()
	ctx := t.Context()
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "root", Seq: 7, Kind: "start"}}); err != nil {
		t.Fatal(err)
	}
	batch := make([]cadre.JournalEntry, 200)
	for i := range batch {
		batch[i] = cadre.JournalEntry{Run: "r1", Agent: "root", Seq: int64(i + 1), Kind: "model_result"}
	}
	err := s.Append(ctx, batch)
	want := `postgres: append journal entry 7 of 200: run "r1" agent root seq 7 exists already`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got error %v, want one starting %q", err, want)
	}
}
