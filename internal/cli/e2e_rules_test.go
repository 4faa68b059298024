package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The tool rules of an agent file hold when the binary runs it, even with
// every call approved: Bash(git *) runs no other command, and OpenCode's
// edit map writes nowhere but plans/.
func TestE2ERulesOfAgentFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".claude", "agents", "gitter.md"),
		"---\nname: gitter\ndescription: Looks at the repository.\ntools: Read, Bash(git *)\n---\nYou use git.\n")
	writeFile(t, filepath.Join(dir, ".claude", "agents", "reader.md"),
		"---\nname: reader\ndescription: Reads the sources.\ntools: Read(src/**)\n---\nYou read sources.\n")
	writeFile(t, filepath.Join(dir, "secret.txt"), "the launch code is 0000\n")
	writeFile(t, filepath.Join(dir, "src", "main.txt"), "hello from src\n")
	if err := os.Symlink("../secret.txt", filepath.Join(dir, "src", "link.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".opencode", "agent", "planner.md"),
		"---\ndescription: Writes plans.\nmode: subagent\npermission:\n  edit:\n    \"*\": deny\n    \"plans/**\": allow\n---\nYou plan.\n")
	var refusals []string
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		if len(req.Messages) == 2 {
			if strings.HasPrefix(req.system(), "You read sources.") {
				return chatReply{Calls: []toolCall{
					{Name: "read_file", Args: `{"path":"src/main.txt"}`},
					{Name: "read_file", Args: `{"path":"src/link.txt"}`},
				}}
			}
			if strings.HasPrefix(req.system(), "You use git.") {
				return chatReply{Calls: []toolCall{
					{Name: "run_command", Args: `{"command":"echo pwned > marker.txt"}`},
					{Name: "run_command", Args: `{"command":"git --version; touch marker2.txt"}`},
				}}
			}
			return chatReply{Calls: []toolCall{
				{Name: "write_file", Args: `{"path":"src/main.go","content":"package main\n"}`},
				{Name: "write_file", Args: `{"path":"plans/next.md","content":"# Next\n"}`},
			}}
		}
		for _, m := range req.Messages {
			if m.Role == "tool" {
				refusals = append(refusals, contentText(m.Content))
			}
		}
		return chatReply{Text: "done"}
	})
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	for _, agent := range []string{"gitter", "planner", "reader"} {
		res := runBinary(t, dir, env, "run", "--store", "none", "--approve=all", "--agent", agent, "-m", "openai:test-model", "work")
		if res.code != 0 {
			t.Fatalf("%s: exit %d\nstderr: %s", agent, res.code, res.stderr)
		}
	}
	for _, f := range []string{"marker.txt", "marker2.txt", "src/main.go"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was written: the agent's rules did not hold", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "plans", "next.md")); err != nil {
		t.Errorf("plans/next.md, which the rules allow, was not written: %v", err)
	}
	all := strings.Join(refusals, "\n")
	if strings.Contains(all, "launch code") || !strings.Contains(all, "hello from src") {
		t.Errorf("read_file through a link out of src/: the secret reached the model, or src/ could not be read:\n%s", all)
	}
	for _, want := range []string{"tools: Bash(git *)", ".claude/agents/gitter.md:4:8", `permission: edit: "*": deny`, "which leads to secret.txt"} {
		if !strings.Contains(all, want) {
			t.Errorf("the model was not told %q:\n%s", want, all)
		}
	}
}

// What a model is offered for delegation follows the agent file: listing
// spawn_agent offers spawn_agent (not every delegation tool), and OpenCode's
// task: {"*": deny, explore: allow} keeps delegation, with explore the only
// agent named.
func TestE2EDelegationGrants(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".claude", "agents", "lead.md"),
		"---\nname: lead\ndescription: Leads.\ntools: Read, spawn_agent\n---\nYou lead.\n")
	writeFile(t, filepath.Join(dir, ".opencode", "agent", "chief.md"),
		"---\ndescription: Leads through explore.\nmode: primary\npermission:\n  task:\n    \"*\": deny\n    explore: allow\n---\nYou are the chief.\n")
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "explore.md"), "---\nname: explore\ndescription: Explores.\n---\nYou explore.\n")
	writeFile(t, filepath.Join(dir, ".cadre", "agents", "writer.md"), "---\nname: writer\ndescription: Writes.\n---\nYou write.\n")
	offered := map[string][]string{}
	systems := map[string]string{}
	srv := newOpenAIServer(t, func(req *chatRequest) chatReply {
		sys := req.system()
		for _, who := range []string{"lead", "chief"} {
			if strings.Contains(sys, "You "+map[string]string{"lead": "lead.", "chief": "are the chief."}[who]) {
				offered[who] = req.toolNames()
				systems[who] = sys
			}
		}
		return chatReply{Text: "done"}
	})
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=k"}
	for _, agent := range []string{"lead", "chief"} {
		res := runBinary(t, dir, env, "run", "--store", "none", "--agent", agent, "-m", "openai:test-model", "work")
		if res.code != 0 {
			t.Fatalf("%s: exit %d\nstderr: %s", agent, res.code, res.stderr)
		}
	}
	delegation := []string{"spawn_agent", "start_background_agent", "list_agents", "cancel_agent", "wait_agent", "answer_agent",
		"agent_onboard", "agent_onboard_reply", "call_agent", "agent_fork", "agent_create", "agent_call"}
	var lead []string
	for _, n := range offered["lead"] {
		if slices.Contains(delegation, n) {
			lead = append(lead, n)
		}
	}
	if !slices.Equal(lead, []string{"spawn_agent"}) {
		t.Errorf("lead, which lists spawn_agent, was offered %v", lead)
	}
	if !slices.Contains(offered["chief"], "spawn_agent") {
		t.Errorf("chief lost delegation: %v", offered["chief"])
	}
	if !strings.Contains(systems["chief"], "explore") || strings.Contains(systems["chief"], "writer") {
		t.Errorf("chief's prompt:\n%s", systems["chief"])
	}
}
