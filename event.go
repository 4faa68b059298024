package cadre

import (
	"encoding/json"
	"maps"
	"time"
)

// EventType names what happened.
type EventType string

// The events a run emits. Every event carries the run, the agent and, for
// agents below the root, the parent and depth.
const (
	EventRunStarted       EventType = "run_started"
	EventRunCompleted     EventType = "run_completed"
	EventRunFailed        EventType = "run_failed"
	EventAgentStarted     EventType = "agent_started"
	EventAgentSpawned     EventType = "agent_spawned"
	EventAgentQueued      EventType = "queued"
	EventAgentCompleted   EventType = "agent_completed"
	EventAgentFailed      EventType = "agent_failed"
	EventAgentCancelled   EventType = "agent_cancelled"
	EventAgentReported    EventType = "agent_reported"
	EventAgentNudged      EventType = "agent_nudged"
	EventModelDelta       EventType = "model_delta"
	EventModelResponse    EventType = "model_response"
	EventToolCalled       EventType = "tool_called"
	EventToolResult       EventType = "tool_result"
	EventMessageSent      EventType = "message_sent"
	EventFinding          EventType = "finding"
	EventBudgetWarning    EventType = "budget_warning"
	EventBudgetExhausted  EventType = "budget_exhausted"
	EventDepthLimit       EventType = "depth_limit"
	EventAgentLimit       EventType = "agent_limit"
	EventCycleDetected    EventType = "cycle_detected"
	EventSynthesisStarted EventType = "synthesis_started"
	EventSay              EventType = "say"
	EventOnboardQuestion  EventType = "onboarding_question"
	EventOnboardAnswer    EventType = "onboarding_answer"
	EventQuestion         EventType = "agent_question"
	EventAnswer           EventType = "agent_answer"
	EventAgentCreated     EventType = "agent_created"
	EventRunResumed       EventType = "run_resumed"
	EventWarning          EventType = "warning"
)

// An Event is something that happened in a run. Data holds the fields that
// depend on the type; in JSON they sit beside the common fields.
type Event struct {
	Seq    int64          `json:"seq,omitempty"`
	Type   EventType      `json:"type"`
	Time   time.Time      `json:"time"`
	Run    string         `json:"run"`
	Agent  AgentID        `json:"agent,omitempty"`
	Parent AgentID        `json:"parent,omitempty"`
	Depth  int            `json:"depth,omitempty"`
	Data   map[string]any `json:"-"`
}

var eventCommon = []string{"seq", "type", "time", "run", "agent", "parent", "depth"}

// MarshalJSON writes the common fields and Data as one flat object.
func (e Event) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(e.Data)+7)
	maps.Copy(m, e.Data)
	if e.Seq != 0 {
		m["seq"] = e.Seq
	}
	m["type"] = e.Type
	m["time"] = e.Time.UTC().Format(time.RFC3339Nano)
	m["run"] = e.Run
	if e.Agent != "" {
		m["agent"] = e.Agent
	}
	if e.Parent != "" {
		m["parent"] = e.Parent
		m["depth"] = e.Depth
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Event) UnmarshalJSON(b []byte) error {
	type common struct {
		Seq    int64     `json:"seq"`
		Type   EventType `json:"type"`
		Time   time.Time `json:"time"`
		Run    string    `json:"run"`
		Agent  AgentID   `json:"agent"`
		Parent AgentID   `json:"parent"`
		Depth  int       `json:"depth"`
	}
	var c common
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, k := range eventCommon {
		delete(m, k)
	}
	*e = Event{Seq: c.Seq, Type: c.Type, Time: c.Time, Run: c.Run, Agent: c.Agent, Parent: c.Parent, Depth: c.Depth}
	if len(m) > 0 {
		e.Data = m
	}
	return nil
}
