package cadre

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/cadre-ai/cadre/internal/jsonw"
)

// EventType names what happened.
type EventType string

// The events a run emits. Every event carries the run, the agent and, for
// agents below the root, the parent and depth; the fields that depend on
// the type are its payload (see Payload), one struct per type, named as the
// constant without its Event prefix (except EventFinding's, which is
// FindingReported). docs/events.md describes each type's JSON.
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
	EventTodos            EventType = "agent_todos"
	EventToolRefused      EventType = "tool_refused"
	EventTurnLimit        EventType = "turn_limit"
	EventRunContinued     EventType = "run_continued"
	EventAgentWoken       EventType = "agent_woken"
	// EventSkipped is not something that happened in the run: an event
	// stream sends it to a watcher that fell behind, in place of the events
	// it missed. Stores never hold it.
	EventSkipped EventType = "events_skipped"
)

// An Event is something that happened in a run. Data is the payload of
// Type: the struct of that type (ToolCalled for EventToolCalled, …), or
// nil when the event has no fields of its own. In JSON the payload's
// fields sit beside the common ones, in one flat object.
type Event struct {
	// Seq numbers a run's stored events from 1, in order; it is 0 for an
	// event that is not stored (model_delta, events_skipped, or a run
	// without a store).
	Seq    int64
	Type   EventType
	Time   time.Time
	Run    string
	Agent  AgentID
	Parent AgentID
	Depth  int
	Data   Payload
}

// A Payload is the part of an Event that depends on its type. The payload
// types are this package's; each one's EventType names the events it
// belongs to.
type Payload interface {
	EventType() EventType
	payload()
}

// NewEvent returns an event of p's type with p as its payload.
func NewEvent(p Payload) Event { return Event{Type: p.EventType(), Data: p} }

// MarshalJSON writes the event as one flat object: seq (when not 0), type,
// time (RFC 3339, UTC, with nanoseconds), run, agent (when set), parent and
// depth (below the root), then the payload's fields.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 192))
}

// AppendJSON appends what MarshalJSON writes to b and returns the longer
// slice; on error it returns b as it was.
func (e Event) AppendJSON(b []byte) ([]byte, error) {
	b0 := b
	b = append(b, '{')
	if e.Seq != 0 {
		b = append(b, `"seq":`...)
		b = strconv.AppendInt(b, e.Seq, 10)
		b = append(b, ',')
	}
	b = append(b, `"type":`...)
	b = jsonw.AppendString(b, string(e.Type))
	b = append(b, `,"time":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","run":`...)
	b = jsonw.AppendString(b, e.Run)
	if e.Agent != "" {
		b = append(b, `,"agent":`...)
		b = jsonw.AppendString(b, string(e.Agent))
	}
	if e.Parent != "" {
		b = append(b, `,"parent":`...)
		b = jsonw.AppendString(b, string(e.Parent))
		b = append(b, `,"depth":`...)
		b = strconv.AppendInt(b, int64(e.Depth), 10)
	}
	if e.Data != nil {
		if fs, ok := payloadFields[reflect.TypeOf(e.Data)]; ok {
			if out, ok := appendFields(b, reflect.ValueOf(e.Data), fs); ok {
				return append(out, '}'), nil
			}
		}
		p, err := json.Marshal(e.Data)
		if err != nil {
			return b0, fmt.Errorf("cadre: encode the %s event's payload: %w", e.Type, err)
		}
		// p is an object: its fields join the common ones.
		if p = bytes.TrimSpace(p); len(p) > 2 && p[0] == '{' {
			b = append(b, ',')
			b = append(b, p[1:len(p)-1]...)
		}
	}
	return append(b, '}'), nil
}

// eventCommon are the JSON names of Event's own fields; no payload uses
// them.
var eventCommon = [...]string{"seq", "type", "time", "run", "agent", "parent", "depth"}

// UnmarshalJSON reads what MarshalJSON writes. The payload is decoded into
// its type's struct; fields it does not know are ignored. An event of a
// type this package does not know keeps its own fields in a RawPayload, so
// that writing it again loses nothing. Data is nil when the object has no
// fields besides the common ones.
func (e *Event) UnmarshalJSON(b []byte) error {
	var c struct {
		Seq    int64     `json:"seq"`
		Type   EventType `json:"type"`
		Time   time.Time `json:"time"`
		Run    string    `json:"run"`
		Agent  AgentID   `json:"agent"`
		Parent AgentID   `json:"parent"`
		Depth  int       `json:"depth"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	for _, k := range eventCommon {
		delete(fields, k)
	}
	*e = Event{Seq: c.Seq, Type: c.Type, Time: c.Time, Run: c.Run, Agent: c.Agent, Parent: c.Parent, Depth: c.Depth}
	if len(fields) == 0 {
		return nil
	}
	if e.Data = decodePayload(c.Type, b); e.Data == nil {
		e.Data = RawPayload{Type: c.Type, Fields: fields}
	}
	return nil
}

// A RawPayload holds the fields of an event whose type this package does
// not know (one written by a newer cadre), as they were.
type RawPayload struct {
	Type   EventType
	Fields map[string]json.RawMessage
}

func (p RawPayload) EventType() EventType { return p.Type }

// MarshalJSON writes the fields back as they were read.
func (p RawPayload) MarshalJSON() ([]byte, error) {
	if p.Fields == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(p.Fields)
}

func (RawPayload) payload() {}
