package prompt

import (
	"slices"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tagproto"
)

// TestFixedTexts pins texts specified word for word elsewhere.
func TestFixedTexts(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"NudgeTool", NudgeTool, "You haven't sent your results to your parent agent yet. Use the send_agent_message tool to deliver your results. No agentId is needed — it defaults to your parent."},
		{"NudgeTag", NudgeTag, "You must wrap your final answer in <response>...</response> tags. Emit your response now."},
		{"NoResponseError", NoResponseError, "Error: subagent did not produce a response."},
		{"PreviousResult", PreviousResult("step one found X"), "Previous sub-agent result for context:\nstep one found X"},
		{"PreviousResult_empty", PreviousResult(""), "Previous sub-agent result for context:\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q\nwant %q", tt.got, tt.want)
			}
		})
	}
	if strings.Contains(FinalAnswerRequest, "\n") || !strings.Contains(FinalAnswerRequest, "final answer") || !strings.Contains(FinalAnswerRequest, "tools") {
		t.Errorf("FinalAnswerRequest = %q: want one line asking for a final answer without tools", FinalAnswerRequest)
	}
}

func TestUserMessage(t *testing.T) {
	tests := []struct{ name, task, context, want string }{
		{"no_context", "Summarize the file", "", "Summarize the file"},
		{"whitespace_context", "Summarize the file", " \n\t ", "Summarize the file"},
		{"context", "Summarize the file", "Workspace is the repo.", "Context:\nWorkspace is the repo.\n\nTask:\nSummarize the file"},
		{"context_trimmed", "Task", "\n  ctx line 1\nctx line 2  \n", "Context:\nctx line 1\nctx line 2\n\nTask:\nTask"},
		{"task_kept_verbatim", "  spaced task\n", "c", "Context:\nc\n\nTask:\n  spaced task\n"},
		{"task_verbatim_without_context", "  spaced task\n", "", "  spaced task\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UserMessage(tt.task, tt.context); got != tt.want {
				t.Errorf("UserMessage(%q, %q) = %q, want %q", tt.task, tt.context, got, tt.want)
			}
		})
	}
}

func TestSystemMessage(t *testing.T) {
	tests := []struct{ name, origin, text, want string }{
		{"basic", "root/researcher.1", "found it", `<system_message origin="root/researcher.1">found it</system_message>`},
		{"origin_escaped", `a"<b>&`, "x", `<system_message origin="a&quot;&lt;b&gt;&amp;">x</system_message>`},
		{"text_trimmed_not_escaped", "o", "\n  <b>bold</b> & co \n", `<system_message origin="o"><b>bold</b> & co</system_message>`},
		{"no_origin", "", "hi", `<system_message>hi</system_message>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SystemMessage(tt.origin, tt.text); got != tt.want {
				t.Errorf("SystemMessage(%q, %q) = %q, want %q", tt.origin, tt.text, got, tt.want)
			}
		})
	}
}

func TestFollowUpMessage(t *testing.T) {
	got := FollowUpMessage(`root/a"1`, " more data ")
	want := "<system_message origin=\"root/a&quot;1\" kind=\"follow-up\">Follow-up from root/a\"1, sent after its report (this is not the report):\nmore data</system_message>"
	if got != want {
		t.Errorf("FollowUpMessage = %q, want %q", got, want)
	}
	if got == SystemMessage(`root/a"1`, " more data ") {
		t.Error("a follow-up must not look like a report")
	}
}

func TestDiscovery(t *testing.T) {
	t.Run("no_user_facing_agents", func(t *testing.T) {
		defs := []*cadre.Definition{nil, {Name: "indexer", Visibility: cadre.VisibilityInternal}}
		if got := Discovery(defs); got != "" {
			t.Errorf("Discovery = %q, want no block", got)
		}
		if got := Discovery(nil); got != "" {
			t.Errorf("Discovery(nil) = %q, want no block", got)
		}
	})
	t.Run("sorted_internal_hidden", func(t *testing.T) {
		got := Discovery(catalog())
		if !strings.HasPrefix(got, DiscoveryHeader+"\n\n") {
			t.Errorf("block does not start with the header: %q", got)
		}
		if strings.Contains(got, "indexer") {
			t.Error("internal agent listed")
		}
		a, r, s := strings.Index(got, "## code-analyst"), strings.Index(got, "## research-assistant"), strings.Index(got, "## summarizer")
		if a < 0 || !(a < r && r < s) {
			t.Errorf("agents not listed in name order: %d %d %d", a, r, s)
		}
		for _, want := range []string{
			"Tools: inherits the caller's tools\nTimeout: 300s",
			"Use it for questions that need two or more sources.\nTools: web_fetch, read_file\nTimeout: 120s",
			"Tools: none\n",
			"## How to delegate",
			`context: "`,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("block lacks %q", want)
			}
		}
	})
}

func TestCapabilities(t *testing.T) {
	tests := []struct {
		name            string
		depth, maxDepth int
		want            bool
	}{
		{"root_may_spawn", 0, 3, true},
		{"below_limit", 2, 3, true},
		{"at_limit", 3, 3, false},
		{"no_depth", 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Capabilities(catalog(), tt.depth, tt.maxDepth)
			if (got != "") != tt.want {
				t.Fatalf("Capabilities(%d, %d) = %q, want a section: %v", tt.depth, tt.maxDepth, got, tt.want)
			}
			if !tt.want {
				return
			}
			for _, want := range []string{
				"<agent_capabilities>", "</agent_capabilities>",
				`mode="parallel"`, `mode="sequential"`, `name="…"`, `context="…"`,
				"  - code-analyst: Analyze code, run commands, and review files.",
				"  - research-assistant: Deep web research with search and citation.\n",
				"single quotes",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("section lacks %q", want)
				}
			}
			if strings.Contains(got, "indexer") {
				t.Error("internal agent listed")
			}
		})
	}
}

// TestCapabilitiesSeedLines checks that the section keeps the lines of the
// <agent_capabilities> text the spawn protocol was specified with, the
// depth limit filled in.
func TestCapabilitiesSeedLines(t *testing.T) {
	got := Capabilities(catalog(), 0, 3)
	for _, line := range []string{
		"<agent_capabilities>",
		"You can decompose complex tasks by spawning sub-agents. To do this, include a spawn block in your response:",
		"For parallel execution (tasks run simultaneously):",
		`<spawn_agents mode="parallel">`,
		`  <agent task="Description of sub-task 1" />`,
		`  <agent task="Description of sub-task 2" />`,
		"</spawn_agents>",
		"For sequential execution (each task sees the previous result):",
		`<spawn_agents mode="sequential">`,
		`  <agent task="First step description" />`,
		`  <agent task="Second step description" />`,
		"Guidelines:",
		"- Only spawn sub-agents when the task genuinely benefits from decomposition",
		"- Each task description should be specific and self-contained",
		"- Sub-agents inherit your personality and respond in character",
		"- You may include text before the spawn block to explain your approach",
		"- After sub-agents complete, you will receive their results and should synthesize a cohesive response",
		"- Sub-agents can spawn their own sub-agents up to 3 levels deep; you are at level 0",
		"</agent_capabilities>",
	} {
		if !slices.Contains(strings.Split(got, "\n"), line) {
			t.Errorf("section lacks the line %q", line)
		}
	}
	if !strings.HasPrefix(got, "<agent_capabilities>\n") || !strings.HasSuffix(got, "\n</agent_capabilities>") {
		t.Errorf("section is not wrapped in <agent_capabilities> lines:\n%s", got)
	}
}

// TestCapabilitiesExamplesParse checks that every spawn block and <agent>
// example the section shows is read by tagproto.ParseSpawn as the section
// says it will be.
func TestCapabilitiesExamplesParse(t *testing.T) {
	got := Capabilities(catalog(), 0, 3)
	var blocks []*tagproto.SpawnBlock
	for rest := got; ; {
		i := strings.Index(rest, "<spawn_agents ")
		if i < 0 {
			break
		}
		b, ok := tagproto.ParseSpawn(rest[i:])
		if !ok {
			t.Fatalf("example block does not parse:\n%s", rest[i:])
		}
		blocks = append(blocks, b)
		rest = rest[i+len("<spawn_agents "):]
	}
	if len(blocks) != 2 || blocks[0].Mode != tagproto.Parallel || blocks[1].Mode != tagproto.Sequential {
		t.Fatalf("want a parallel and a sequential example, got %+v", blocks)
	}
	for _, b := range blocks {
		if len(b.Tasks) != 2 {
			t.Errorf("%s example has %d tasks, want 2", b.Mode, len(b.Tasks))
		}
	}

	const prefix = "For example: "
	i := strings.Index(got, prefix)
	if i < 0 {
		t.Fatal("no <agent> example with name and context")
	}
	line, _, _ := strings.Cut(got[i+len(prefix):], "\n")
	b, ok := tagproto.ParseSpawn("<spawn_agents>" + line + "</spawn_agents>")
	if !ok || len(b.Tasks) != 1 {
		t.Fatalf("example %q does not parse as one agent", line)
	}
	if task := b.Tasks[0]; task.Name != "code-analyst" || task.Task == "" || task.Context == "" {
		t.Errorf("example %q parses as %+v, want a name, a task and a context", line, task)
	}
	if strings.Contains(Capabilities(nil, 0, 3), "For example: <agent name=") {
		t.Error("example names a definition although there is none")
	}
}

func TestSubAgentInstructions(t *testing.T) {
	tests := []struct {
		name   string
		report cadre.ReportMode
		want   string
	}{
		{"reply_default", "", "<sub_agent_instructions>\nYou are executing a focused sub-task. Respond with your result directly. Be thorough but stay focused on the task.\nYour final reply is sent to your parent agent as it is; the parent sees nothing else of your work.\n</sub_agent_instructions>"},
		{"tool", cadre.ReportTool, "<sub_agent_instructions>\nYou are executing a focused sub-task. Be thorough but stay focused on the task.\n" + reportTool + "\n</sub_agent_instructions>"},
		{"tag", cadre.ReportTag, "<sub_agent_instructions>\nYou are executing a focused sub-task. Be thorough but stay focused on the task.\n" + reportTag + "\n</sub_agent_instructions>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SubAgent(SubAgentParams{Task: " T \n", Report: tt.report})
			if want := "<task>\nT\n</task>\n\n" + tt.want; got != want {
				t.Errorf("SubAgent = %q\nwant %q", got, want)
			}
		})
	}
}

func TestSubAgentCapabilitiesOnlyBelowLimit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		depth int
		want  bool
	}{{"depth_2_of_3", 2, true}, {"depth_3_of_3", 3, false}} {
		t.Run(tt.name, func(t *testing.T) {
			got := SubAgent(SubAgentParams{Soul: "S", Task: "T", Depth: tt.depth, MaxDepth: 3})
			if strings.Contains(got, "<agent_capabilities>") != tt.want {
				t.Errorf("capabilities present = %v, want %v:\n%s", !tt.want, tt.want, got)
			}
			if !strings.Contains(got, "<soul>\nS\n</soul>") || !strings.Contains(got, "<task>\nT\n</task>") || !strings.Contains(got, "<sub_agent_instructions>") {
				t.Errorf("missing sections:\n%s", got)
			}
			if strings.Contains(got, "<identity>") {
				t.Error("empty identity rendered")
			}
		})
	}
}

func TestChildPromptVerbatim(t *testing.T) {
	for _, tt := range []struct{ name, prompt, sep string }{
		{"no_newline", "You review.", "\n\n"},
		{"one_newline", "You review.\n", "\n"},
		{"blank_line", "You review.\n\n", ""},
		{"trailing_spaces_kept", "  You review.  ", "\n\n"},
		{"empty", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			def := &cadre.Definition{Name: "r", Prompt: tt.prompt}
			got := Child(ChildParams{Def: def, Depth: 1, MaxDepth: 2})
			if want := tt.prompt + tt.sep + ChildHeader + "\n\n"; !strings.HasPrefix(got, want) {
				t.Errorf("Child = %q, want prefix %q", got, want)
			}
			if !strings.Contains(got, NudgeTool[strings.Index(NudgeTool, "No agentId"):]) {
				t.Errorf("tool report instructions missing:\n%s", got)
			}
		})
	}
}

func TestChildReportSection(t *testing.T) {
	def := func(r cadre.ReportMode) *cadre.Definition {
		return &cadre.Definition{Name: "x", Prompt: "P", Report: r}
	}
	tests := []struct {
		name     string
		p        ChildParams
		contains []string
		lacks    []string
	}{
		{"tool_default", ChildParams{Def: def(""), Depth: 1}, []string{"send_agent_message exactly once"}, []string{"<response>", "ask_caller", "[available-subagents"}},
		{"tag", ChildParams{Def: def(cadre.ReportTag), Depth: 1}, []string{"<response>...</response>", "first <response> and the last </response>", "unmodified"}, []string{"send_agent_message"}},
		{"report_override", ChildParams{Def: def(""), Report: cadre.ReportTag, Depth: 1}, []string{"<response>...</response>"}, []string{"send_agent_message"}},
		{"report_override_to_tool", ChildParams{Def: def(cadre.ReportTag), Report: cadre.ReportTool, Depth: 1}, []string{"send_agent_message exactly once"}, []string{"<response>"}},
		{"text_protocol_reply", ChildParams{Def: def(cadre.ReportTag), Protocol: cadre.ProtocolText, Depth: 1}, []string{"final reply is sent to your parent"}, []string{"send_agent_message", "<response>"}},
		{"ask_caller", ChildParams{Def: def(""), Depth: 1, AskCaller: true}, []string{"ask_caller"}, nil},
		{"delegate_tools", ChildParams{Def: def(""), Depth: 1, MaxDepth: 3, CanDelegate: true, Defs: catalog()}, []string{DiscoveryHeader}, []string{"<agent_capabilities>"}},
		{"delegate_text", ChildParams{Def: def(""), Depth: 1, MaxDepth: 3, CanDelegate: true, Protocol: cadre.ProtocolText, Defs: catalog()}, []string{"<agent_capabilities>"}, []string{DiscoveryHeader}},
		{"soul_identity", ChildParams{Def: def(""), Depth: 1, Soul: " Calm ", Identity: "Ada"}, []string{"<soul>\nCalm\n</soul>", "<identity>\nAda\n</identity>"}, nil},
		{"root_definition_no_report", ChildParams{Def: def(""), Depth: 0, MaxDepth: 3, CanDelegate: true, Defs: catalog()}, []string{DiscoveryHeader, "list_agents"}, []string{"send_agent_message exactly once", "parent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Child(tt.p)
			if !strings.HasPrefix(got, "P\n\n"+ChildHeader) {
				t.Errorf("prompt does not open with the definition's prompt and the header:\n%s", got)
			}
			for _, s := range tt.contains {
				if !strings.Contains(got, s) {
					t.Errorf("lacks %q:\n%s", s, got)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(got, s) {
					t.Errorf("holds %q:\n%s", s, got)
				}
			}
		})
	}
	t.Run("root_definition_alone_is_verbatim", func(t *testing.T) {
		if got := Child(ChildParams{Def: def("")}); got != "P" {
			t.Errorf("Child = %q, want the prompt alone", got)
		}
	})
	t.Run("nil_definition", func(t *testing.T) {
		if got := Child(ChildParams{Depth: 1}); !strings.HasPrefix(got, ChildHeader) {
			t.Errorf("Child(nil def) = %q", got)
		}
	})
}

func TestRoot(t *testing.T) {
	tests := []struct {
		name     string
		p        RootParams
		contains []string
		lacks    []string
	}{
		{"bare", RootParams{}, []string{"workspace with tools"}, []string{"<soul>", "<identity>", "<project_guidance>", DiscoveryHeader, "<agent_capabilities>"}},
		{"guidance", RootParams{Guidance: "\nRun make test.\n"}, []string{"<project_guidance>\nRun make test.\n</project_guidance>"}, nil},
		{"tools", RootParams{CanDelegate: true, Protocol: cadre.ProtocolTools, Defs: catalog(), MaxDepth: 3}, []string{DiscoveryHeader}, []string{"<agent_capabilities>"}},
		{"auto_is_tools", RootParams{CanDelegate: true, Protocol: cadre.ProtocolAuto, Defs: catalog(), MaxDepth: 3}, []string{DiscoveryHeader}, nil},
		{"text", RootParams{CanDelegate: true, Protocol: cadre.ProtocolText, Defs: catalog(), MaxDepth: 3}, []string{"<agent_capabilities>", "up to 3 levels deep", "You cannot call tools"}, []string{DiscoveryHeader, "with your tools", "workspace with tools"}},
		{"cannot_delegate", RootParams{Protocol: cadre.ProtocolText, Defs: catalog(), MaxDepth: 3}, []string{"You cannot call tools"}, []string{"<agent_capabilities>", DiscoveryHeader, "workspace with tools"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Root(tt.p)
			for _, s := range tt.contains {
				if !strings.Contains(got, s) {
					t.Errorf("lacks %q:\n%s", s, got)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(got, s) {
					t.Errorf("holds %q:\n%s", s, got)
				}
			}
		})
	}
}

func TestSynthesis(t *testing.T) {
	results := []Result{
		{Task: "b task", Status: StatusCompleted, Output: "B out"},
		{Task: "a & <task>", Status: StatusFailed, Output: "boom"},
		{Task: "c", Status: StatusFailed, Output: "Error: already prefixed"},
		{Task: "d", Status: StatusCancelled, Output: "stopped"},
		{Task: "e", Status: StatusCompleted, Output: ""},
		{Task: "f", Output: "no status"},
		{Task: "g", Status: StatusFailed, Output: " \n"},
		{Task: "h", Status: "timed-out", Output: "after 30s"},
	}
	got := Synthesis("What is the state of X?", results)
	for _, want := range []string{
		"<sub_agent_results>\n<result task=\"b task\" status=\"completed\">\nB out\n</result>\n",
		"<result task=\"a &amp; &lt;task&gt;\" status=\"failed\">\nError: boom\n</result>",
		"\nError: already prefixed\n",
		"<result task=\"d\" status=\"cancelled\">\nError: stopped\n</result>",
		"<result task=\"e\" status=\"completed\">\n(no output)\n</result>",
		"<result task=\"f\" status=\"completed\">\nno status\n</result>",
		"<result task=\"g\" status=\"failed\">\n(no output)\n</result>",
		"<result task=\"h\" status=\"timed-out\">\nError: after 30s\n</result>\n</sub_agent_results>\n\n",
		"<original_request>\nWhat is the state of X?\n</original_request>",
		"write one coherent response to the original request",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Error: Error:") {
		t.Error("Error prefix doubled")
	}
	if i, j := strings.Index(got, `task="b task"`), strings.Index(got, `task="f"`); i < 0 || j < i {
		t.Error("results not in the given order")
	}
	if strings.Contains(Synthesis("  ", nil), "original_request") {
		t.Error("blank request rendered")
	}
	if e := Synthesis("", nil); !strings.HasPrefix(e, "<sub_agent_results>\n</sub_agent_results>\n\n") {
		t.Errorf("empty results: %q", e)
	}
}

func TestOnboarding(t *testing.T) {
	if got := Onboarding("", 0); !strings.Contains(got, "at most 5 questions") || strings.Contains(got, "What your caller told you") {
		t.Errorf("Onboarding with defaults = %q", got)
	}
	if got := Onboarding("ctx", 1); !strings.Contains(got, "at most 1 question,") || !strings.HasSuffix(got, "\n\nWhat your caller told you so far:\nctx") {
		t.Errorf("Onboarding(ctx, 1) = %q", got)
	}
	tests := []struct {
		name          string
		qa            []QA
		task, context string
		want          string
	}{
		{"no_questions", nil, "T", "", "T"},
		{"no_questions_context", nil, "T", "C", "Context:\nC\n\nTask:\nT"},
		{"one", []QA{{"Q1?", "A1."}}, "T", "", "Onboarding:\nQ: Q1?\nA: A1.\n\nT"},
		{"two_with_context", []QA{{" Q1? ", "A1.\n"}, {"Q2?", ""}}, "T", "C", "Onboarding:\nQ: Q1?\nA: A1.\n\nQ: Q2?\nA: \n\nContext:\nC\n\nTask:\nT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OnboardedTask(tt.qa, tt.task, tt.context); got != tt.want {
				t.Errorf("OnboardedTask = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDeterministic checks that equal inputs give equal bytes, which replay
// relies on.
func TestDeterministic(t *testing.T) {
	a := Root(RootParams{Defs: catalog(), CanDelegate: true, MaxDepth: 2, Soul: "s"})
	for range 20 {
		if b := Root(RootParams{Defs: catalog(), CanDelegate: true, MaxDepth: 2, Soul: "s"}); a != b {
			t.Fatal("Root output changed between calls")
		}
	}
}
