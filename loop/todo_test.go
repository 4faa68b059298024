package loop

import (
	"slices"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
)

// todoConfig is a root that was given the task-list tools.
func todoConfig() Config {
	cfg := rootConfig()
	cfg.Tools = append(cfg.Tools, TodoSpecs()...)
	return cfg
}

// todo_write keeps the agent's list and shows it; todo_read gives it back;
// both are answered by the loop in the order of the calls, beside an
// ordinary tool, and each write is an agent_todos event.
func TestTodoTools(t *testing.T) {
	h := start(t, todoConfig(), "task")
	acts := h.reply("planning",
		call("w1", ToolTodoWrite, `{"todos":[{"content":"Read the code","status":"completed"},{"content":"Fix the bug","status":"in_progress","activeForm":"Fixing the bug"},{"content":"Run the tests","status":"pending","priority":"high"}]}`),
		call("r1", "read_file", `{"path":"a"}`),
		call("t1", ToolTodoRead, `{}`))
	ct, ok := only[CallTools](acts)
	if !ok || len(ct.Calls) != 1 || ct.Calls[0].Name != "read_file" {
		t.Fatalf("only read_file goes to the runner: %#v", acts)
	}
	emits := find[Emit](acts)
	want := []cadre.Todo{{Content: "Read the code", Status: "completed"}, {Content: "Fix the bug", Status: "in_progress", ActiveForm: "Fixing the bug"}, {Content: "Run the tests", Status: "pending", Priority: "high"}}
	if len(emits) != 1 || !slices.Equal(emits[0].Event.(cadre.Todos).Items, want) {
		t.Fatalf("want one agent_todos event with the list, got %#v", emits)
	}
	cm, ok := only[CallModel](h.step(ToolResults{Results: []ToolResult{{CallID: "r1", Content: "A"}}}))
	if !ok {
		t.Fatal("no model call after the results")
	}
	msgs := cm.Request.Messages[len(cm.Request.Messages)-3:]
	if msgs[0].ToolCallID != "w1" || !strings.HasPrefix(msgs[0].Content, "Task list saved: 1 of 3 done.\n1. [completed] Read the code\n2. [in_progress] Fix the bug") ||
		msgs[1].ToolCallID != "r1" || msgs[2].ToolCallID != "t1" || !strings.HasPrefix(msgs[2].Content, "Your task list: 1 of 3 done.") {
		t.Errorf("results %#v", msgs)
	}

	// A bad list is an error for the model, and the list stays as it was.
	acts = h.reply("", call("w2", ToolTodoWrite, `{"todos":[{"content":"Ship","status":"shipped"}]}`), call("t2", ToolTodoRead, `{}`))
	cm, _ = only[CallModel](acts)
	res := cm.Request.Messages[len(cm.Request.Messages)-2:]
	if !strings.Contains(res[0].Content, `task 1 ("Ship") has the status "shipped": use pending, in_progress, completed or cancelled`) ||
		!strings.Contains(res[1].Content, "1 of 3 done") || len(find[Emit](acts)) != 0 {
		t.Errorf("a bad status: %#v", res)
	}
}

// A task-list tool the agent was not given is an unknown tool.
func TestTodoToolsNotGiven(t *testing.T) {
	h := start(t, rootConfig(), "task")
	cm, ok := only[CallModel](h.reply("", call("w1", ToolTodoWrite, `{"todos":[]}`)))
	if !ok || !strings.Contains(h.lastMessage().Content, `unknown tool "todo_write"`) || len(cm.Request.Messages) == 0 {
		t.Errorf("todo_write without the grant: %q", h.lastMessage().Content)
	}
}

func TestParseTodos(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{`{"todos":[]}`, ""},
		{`{}`, "todos is missing"},
		{`{"todos":"x"}`, "the arguments are not valid"},
		{`{"todos":[{"content":" ","status":"pending"}]}`, "task 1 has no content"},
		{`{"todos":[{"content":"a","status":"DONE"}]}`, ""},
		{`{"todos":[{"content":"a","status":"pending","priority":"urgent"}]}`, `the priority "urgent"`},
	} {
		_, err := parseTodos([]byte(c.args))
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.args, err, c.want)
		}
	}
	items, _ := parseTodos([]byte(`{"todos":[{"content":"a","status":"done"},{"content":"b","status":"in-progress"},{"id":"3","content":"c","status":"canceled"}]}`))
	if got := []string{items[0].Status, items[1].Status, items[2].Status}; !slices.Equal(got, []string{"completed", "in_progress", "cancelled"}) {
		t.Errorf("statuses %q", got)
	}
}
