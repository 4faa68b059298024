package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cadre-ai/cadre"
)

// Names of the task-list tools. The loop answers them itself, from the
// agent's state, so the list is journaled with the calls that write it and
// comes back whole when a run resumes.
const (
	ToolTodoWrite = "todo_write"
	ToolTodoRead  = "todo_read"
)

// maxTodos bounds one agent's list.
const maxTodos = 100

// IsTodoTool reports whether name is one of the task-list tools.
func IsTodoTool(name string) bool { return name == ToolTodoWrite || name == ToolTodoRead }

var todoSpecs = []cadre.ToolSpec{
	{
		Name: ToolTodoWrite,
		Description: "Write your task list, whole: every call replaces the list. Use it for work of three steps or more: " +
			"list the steps, mark one in_progress before you start it and completed as soon as it is done, and add " +
			"steps you discover. The person watching sees the list.",
		Parameters: jsonSchema(`{"type":"object","properties":{` +
			`"todos":{"type":"array","description":"The whole list, in order.","items":{"type":"object","properties":{` +
			`"content":{"type":"string","description":"What the task is, in the imperative: Run the tests."},` +
			`"status":{"type":"string","enum":["pending","in_progress","completed","cancelled"]},` +
			`"activeForm":{"type":"string","description":"How it reads while being done: Running the tests."},` +
			`"priority":{"type":"string","enum":["high","medium","low"]}},` +
			`"required":["content","status"]}}},` +
			`"required":["todos"]}`),
	},
	{
		Name:        ToolTodoRead,
		Description: "Read your task list as you last wrote it with todo_write.",
		Parameters:  jsonSchema(`{"type":"object","properties":{}}`),
	},
}

// TodoSpecs returns the specs of the task-list tools, for an engine to
// offer among the ordinary tools: a definition's tools list grants them
// like any other (TodoWrite, TaskCreate and todowrite map to them). The
// loop answers their calls itself; they never reach a tool runner. The
// slice is new on every call.
func TodoSpecs() []cadre.ToolSpec { return append([]cadre.ToolSpec(nil), todoSpecs...) }

// todoArgs are todo_write's arguments. Claude Code writes activeForm,
// OpenCode id and priority; both are read.
type todoArgs struct {
	Todos []struct {
		Content    string `json:"content"`
		Status     string `json:"status"`
		ActiveForm string `json:"activeForm"`
		Priority   string `json:"priority"`
	} `json:"todos"`
}

// todoCall answers a task-list call in slot i.
func (s *State) todoCall(i int, c cadre.ToolCall) []Action {
	if c.Name == ToolTodoRead {
		s.fill(i, todoText(s.todos, "Your task list"), false)
		return nil
	}
	items, err := parseTodos(json.RawMessage(c.Arguments))
	if err != nil {
		s.fill(i, "Error: "+err.Error(), true)
		return nil
	}
	s.todos = items
	s.fill(i, todoText(items, "Task list saved"), false)
	return []Action{Emit{Event: cadre.Todos{Items: items}}}
}

// parseTodos reads and checks todo_write's arguments.
func parseTodos(raw json.RawMessage) ([]cadre.Todo, error) {
	var a todoArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("the arguments are not valid: %v; write {\"todos\": [{\"content\": \"…\", \"status\": \"pending\"}, …]}", err)
	}
	if a.Todos == nil {
		return nil, errors.New(`todos is missing: write the whole list as {"todos": [{"content": "…", "status": "pending"}, …]}, or [] to clear it`)
	}
	if len(a.Todos) > maxTodos {
		return nil, fmt.Errorf("the list has %d tasks; at most %d are kept: group them", len(a.Todos), maxTodos)
	}
	items := make([]cadre.Todo, 0, len(a.Todos))
	for n, t := range a.Todos {
		content := strings.TrimSpace(t.Content)
		if content == "" {
			return nil, fmt.Errorf("task %d has no content: say what the task is", n+1)
		}
		status := strings.ToLower(strings.TrimSpace(t.Status))
		switch status {
		case "pending", "in_progress", "completed", "cancelled":
		case "in-progress", "doing", "active":
			status = "in_progress"
		case "done", "complete":
			status = "completed"
		case "canceled":
			status = "cancelled"
		default:
			return nil, fmt.Errorf("task %d (%q) has the status %q: use pending, in_progress, completed or cancelled", n+1, content, t.Status)
		}
		prio := strings.ToLower(strings.TrimSpace(t.Priority))
		switch prio {
		case "", "high", "medium", "low":
		default:
			return nil, fmt.Errorf("task %d (%q) has the priority %q: use high, medium or low, or leave it out", n+1, content, t.Priority)
		}
		items = append(items, cadre.Todo{Content: content, Status: status, ActiveForm: strings.TrimSpace(t.ActiveForm), Priority: prio})
	}
	return items, nil
}

// todoText shows a task list to the model.
func todoText(items []cadre.Todo, title string) string {
	if len(items) == 0 {
		return title + ": empty."
	}
	done := 0
	for _, t := range items {
		if t.Status == "completed" {
			done++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d done.\n", title, done, len(items))
	for n, t := range items {
		fmt.Fprintf(&b, "%d. [%s] %s\n", n+1, t.Status, t.Content)
	}
	return strings.TrimRight(b.String(), "\n")
}
