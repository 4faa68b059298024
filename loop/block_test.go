package loop

import (
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
)

// A <spawn_agents> block runs tasks: an agent whose grant of delegation
// tools holds none that runs a task (agent_onboard alone) has its block
// refused, told why, and starts no agent, even when its configuration says
// it may delegate.
func TestBlockNeedsTaskTool(t *testing.T) {
	for _, tc := range []struct {
		name       string
		delegation []string
		runs       bool
	}{
		{"every tool", nil, true},
		{"spawn_agent", []string{ToolSpawnAgent}, true},
		{"start_background_agent", []string{ToolStartBackground}, true},
		{"call_agent", []string{ToolOnboard, ToolCallAgent}, true},
		{"agent_call", []string{ToolAgentCall}, true},
		{"agent_onboard", []string{ToolOnboard}, false},
		{"following only", []string{ToolListAgents, ToolWaitAgent, ToolCancelAgent}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rootConfig()
			cfg.Protocol = cadre.ProtocolText
			cfg.Delegation = tc.delegation
			h := start(t, cfg, "task")
			acts := h.reply(`<spawn_agents><agent name="researcher" task="look it up" /></spawn_agents>`)
			spawns := find[Spawn](acts)
			if tc.runs {
				if len(spawns) != 1 {
					t.Fatalf("the block was not run: %#v", acts)
				}
				return
			}
			if len(spawns) != 0 {
				t.Fatalf("the block started %#v", spawns)
			}
			if _, ok := only[CallModel](acts); !ok {
				t.Fatalf("want the model asked again, got %#v", acts)
			}
			if got := h.lastMessage().Content; !strings.Contains(got, "was not run") || !strings.Contains(got, "no tool that runs a task") {
				t.Errorf("the model was told %q", got)
			}
		})
	}
}

// A block naming an internal agent is not run: the model is told which
// agent it may not start and which it may, and asked again; a second such
// block is taken as the reply, as for the other refusals.
func TestBlockRefusesInternalAgent(t *testing.T) {
	cfg := rootConfig()
	cfg.Protocol = cadre.ProtocolText
	h := start(t, cfg, "task")
	acts := h.reply(`<spawn_agents><agent name="researcher" task="look" /><agent name="secret" task="do it" /></spawn_agents>`)
	if spawns := find[Spawn](acts); len(spawns) != 0 {
		t.Fatalf("the block started %#v", spawns)
	}
	if _, ok := only[CallModel](acts); !ok {
		t.Fatalf("want the model asked again, got %#v", acts)
	}
	got := h.lastMessage().Content
	if !strings.Contains(got, `"secret" is an internal agent`) || !strings.Contains(got, "available agents: careful, researcher") {
		t.Errorf("the model was told %q", got)
	}
	acts = h.reply(`<spawn_agents><agent name="secret" task="do it" /></spawn_agents>`)
	if spawns := find[Spawn](acts); len(spawns) != 0 {
		t.Fatalf("the second block started %#v", spawns)
	}
	if _, ok := only[Finish](acts); !ok {
		t.Errorf("want the reply taken as the answer, got %#v", acts)
	}
}

// A <spawn_agents> block naming an agent that requires onboarding is not
// run, as spawn_agent refuses it: a block cannot onboard its agents, and
// the agent ran its task without the onboarding its definition requires.
func TestBlockRefusesAgentRequiringOnboarding(t *testing.T) {
	cfg := rootConfig()
	cfg.Protocol = cadre.ProtocolText
	h := start(t, cfg, "task")
	acts := h.reply(`<spawn_agents><agent name="careful" task="do it" /></spawn_agents>`)
	if spawns := find[Spawn](acts); len(spawns) != 0 {
		t.Fatalf("the block started %#v", spawns)
	}
	if got := h.lastMessage().Content; !strings.Contains(got, `"careful" requires onboarding`) {
		t.Errorf("the model was told %q", got)
	}
}
