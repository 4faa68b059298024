package cli

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A journal entry changed in the store behind cadre's back: cadre resume
// refuses the run, naming the agent and the entry and saying what to do,
// and cadre runs export writes what is readable, marking the entry.
func TestE2EResumeRefusesDamagedJournal(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply { return chatReply{Text: "answer to " + req.firstUser()} })
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	res := runBinaryWithin(t, time.Minute, dir, env, "run", "--store", db, "-m", "openai:test-model", "the task")
	if res.code != 0 {
		t.Fatalf("run: exit %d\nstderr:\n%s", res.code, res.stderr)
	}
	// Flip a byte of the root's model result and mark the run as stopped
	// half way.
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var run string
	var data []byte
	if err := raw.QueryRow(`SELECT run, data FROM journal WHERE agent = 'root' AND seq = 2 AND kind = 'model_result'`).Scan(&run, &data); err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	if _, err := raw.Exec(`UPDATE journal SET data = ? WHERE run = ? AND agent = 'root' AND seq = 2`, data, run); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE runs SET status = 'running' WHERE id = ?`, run); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	res = runBinaryWithin(t, time.Minute, dir, env, "resume", "--store", db, run)
	msg := lastLine(res.stderr)
	if res.code != 1 || !strings.HasPrefix(msg, "cadre: ") {
		t.Fatalf("resume of a damaged run: exit %d, stderr:\n%s", res.code, res.stderr)
	}
	t.Logf("cadre resume says: %s", msg)
	for _, want := range []string{"run " + run + " is damaged", "entry 2 (model_result) of agent root", "cadre runs export " + run, "start the task again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q: %s", want, msg)
		}
	}

	res = runBinaryWithin(t, time.Minute, dir, env, "runs", "export", "--store", db, run, "-o", "run.json")
	if res.code != 0 || !strings.Contains(res.stderr, "1 journal entry damaged") {
		t.Fatalf("export: exit %d, stderr:\n%s", res.code, res.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var x runExport
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	if len(x.Agents) != 1 || len(x.Agents[0].Journal) != 2 {
		t.Fatalf("exported %+v", x.Agents)
	}
	start, result := x.Agents[0].Journal[0], x.Agents[0].Journal[1]
	if start.Damaged || start.Error != "" {
		t.Errorf("the intact entry is marked: %+v", start)
	}
	if !result.Damaged || !strings.HasPrefix(result.Error, "damaged: ") || len(result.Input) == 0 {
		t.Errorf("the damaged entry: damaged %v, error %q, input %s", result.Damaged, result.Error, result.Input)
	}
}
