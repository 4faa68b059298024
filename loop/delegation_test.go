package loop

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-ai/cadre"
)

// offeredDelegation lists the delegation tools of the agent's first model
// request.
func offeredDelegation(t *testing.T, cfg Config) []string {
	t.Helper()
	h := start(t, cfg, "task")
	call := find[CallModel](h.acts)[0]
	var out []string
	for _, s := range call.Request.Tools {
		if delegationTools[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}

// Each delegation tool is offered only as the definition lists it; before,
// listing spawn_agent offered all twelve.
func TestDelegationGranted(t *testing.T) {
	cfg := rootConfig()
	if got := offeredDelegation(t, cfg); len(got) != 11 { // answer_agent only with an askCaller agent
		t.Errorf("no grant: %v", got)
	}
	cfg.Delegation = []string{ToolSpawnAgent}
	if diff := cmp.Diff([]string{ToolSpawnAgent}, offeredDelegation(t, cfg)); diff != "" {
		t.Errorf("spawn_agent alone (-want +got):\n%s", diff)
	}
	// With an agent that asks its caller, the tools to answer it and to
	// collect its report come along.
	cfg.Catalog = append(cfg.Catalog, CatalogEntry{Name: "asker", AskCaller: true})
	if diff := cmp.Diff([]string{ToolSpawnAgent, ToolWaitAgent, ToolAnswerAgent}, offeredDelegation(t, cfg)); diff != "" {
		t.Errorf("spawn_agent with an asking agent (-want +got):\n%s", diff)
	}
	cfg = rootConfig()
	cfg.Delegation = []string{ToolOnboard, ToolCallAgent}
	if diff := cmp.Diff([]string{ToolOnboard, ToolOnboardReply, ToolCallAgent}, offeredDelegation(t, cfg)); diff != "" {
		t.Errorf("agent_onboard (-want +got):\n%s", diff)
	}
	cfg.Delegation = DelegationTools()
	if got := offeredDelegation(t, cfg); len(got) != 11 {
		t.Errorf("every delegation tool: %v", got)
	}
}

// A delegation tool the definition does not grant is refused at dispatch,
// with the ones it does grant.
func TestDelegationRefused(t *testing.T) {
	cfg := rootConfig()
	cfg.Delegation = []string{ToolSpawnAgent}
	h := start(t, cfg, "task")
	acts := h.reply("", call("c1", ToolStartBackground, `{"prompt":"x"}`), call("c2", ToolCreateAgent, `{"name":"n","description":"d","instructions":"i"}`))
	if len(find[Spawn](acts)) != 0 || len(find[CreateAgent](acts)) != 0 {
		t.Fatalf("a refused tool acted: %#v", acts)
	}
	for _, m := range h.s.Messages()[len(h.s.Messages())-2:] {
		if !m.IsError || !strings.Contains(m.Content, "is not one of your tools") || !strings.Contains(m.Content, "grants only these delegation tools: spawn_agent") {
			t.Errorf("%s: %q", m.ToolName, m.Content)
		}
	}
	// spawn_agent still works.
	acts = h.reply("", call("c3", ToolSpawnAgent, `{"agent":"researcher","task":"t"}`))
	if len(find[Spawn](acts)) != 1 {
		t.Errorf("spawn_agent refused: %#v", acts)
	}
	_ = cadre.RootID
}

// A grant of no delegation tool survives the journal: it is not read back
// as a grant of every one.
func TestDelegationJournaled(t *testing.T) {
	cfg := rootConfig()
	cfg.Delegation = []string{}
	data, err := json.Marshal(Start{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	in, err := Decode(Start{}.Kind(), data)
	if err != nil {
		t.Fatal(err)
	}
	got := in.(Start).Config
	if got.Delegation == nil || got.Granted(ToolSpawnAgent) {
		t.Errorf("an empty grant came back as %#v", got.Delegation)
	}
}
