package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/storetest"
)

// damage flips one bit of a stored journal entry's data, as damage on
// the server's disk or another program would.
func damage(t *testing.T, dsn, run string, agent cadre.AgentID, seq int64) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	tag, err := c.Exec(context.Background(), `UPDATE journal SET data = set_byte(data, length(data) / 2, get_byte(data, length(data) / 2) # 32)
		WHERE run = $1 AND agent = $2 AND seq = $3`, run, string(agent), seq)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("no entry %d of %s in run %s to damage", seq, agent, run)
	}
}

func TestDamagedEntry(t *testing.T) {
	dsn, _ := schemaDSN(t)
	s := open(t, dsn)
	defer s.Close()
	storetest.Damaged(t, s, func(t *testing.T, run string, agent cadre.AgentID, seq int64) {
		damage(t, dsn, run, agent, seq)
	})
}

// delegate is a run whose root hands its task to a helper and answers
// with the helper's report.
func delegate(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
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
		return text("the answer"), nil
	}
	if req.Turn == 1 {
		return call(loop.ToolSendAgentMessage, map[string]string{"text": "found it"}), nil
	}
	return text("done"), nil
}

func delegateConfig(s cadre.Store, m cadre.Model) local.Config {
	return local.Config{
		Models: local.OneModel{Name: "fake", Model: m}, RootModel: "fake", Store: s,
		Definitions: []*cadre.Definition{{Name: "helper", Description: "helps", Prompt: "You help.", Visibility: cadre.VisibilityUserFacing}},
	}
}

// A run whose journal was changed in the database is refused by Resume,
// before any model is called, naming the agent and the entry.
func TestResumeRefusesDamagedJournal(t *testing.T) {
	dsn, _ := schemaDSN(t)
	s := open(t, dsn)
	defer s.Close()
	ctx := context.Background()
	e := local.New(delegateConfig(s, scripted.Func(delegate)))
	id, err := e.Start(ctx, "find it", cadre.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.Wait(ctx, id); err != nil || res.Answer != "the answer" {
		t.Fatalf("run: %v %+v", err, res)
	}
	const agent = "root/helper.1"
	damage(t, dsn, id, agent, 2)
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `UPDATE runs SET status = 'running' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	called := false
	again := local.New(delegateConfig(s, scripted.Func(func(ctx context.Context, req *cadre.Request) (*cadre.Response, error) {
		called = true
		return delegate(ctx, req)
	})))
	err = again.Resume(ctx, id)
	de, ok := errors.AsType[*cadre.DamagedError](err)
	if !ok {
		t.Fatalf("Resume of a damaged journal: %v, want a *cadre.DamagedError", err)
	}
	if de.Run != id || de.Agent != agent || de.Seq != 2 || de.Kind != "model_result" {
		t.Errorf("%+v, want run %s, agent %s, entry 2 (model_result)", de, id, agent)
	}
	if !strings.Contains(err.Error(), "is damaged: entry 2 (model_result) of agent "+agent) {
		t.Errorf("message: %s", err)
	}
	if called {
		t.Error("a model was called after the damage was found")
	}
}
