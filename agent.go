package cadre

import "strings"

// An AgentID names an agent within a run. IDs are derived, never random: the
// root is "root", and a child is its parent's ID, a slash, the definition
// name and a per-parent counter, as in "root/research-assistant.2".
type AgentID string

// RootID is the ID of every run's root agent.
const RootID AgentID = "root"

// Child returns the ID of the n-th child (1-based) spawned by id from the
// named definition.
func (id AgentID) Child(name string, n int) AgentID {
	return AgentID(string(id) + "/" + name + "." + itoa(n))
}

// Depth is the number of ancestors: 0 for the root.
func (id AgentID) Depth() int { return strings.Count(string(id), "/") }

// Parent returns the parent's ID, or "" for the root.
func (id AgentID) Parent() AgentID {
	i := strings.LastIndexByte(string(id), '/')
	if i < 0 {
		return ""
	}
	return id[:i]
}

// IsAncestorOf reports whether id is a strict ancestor of other.
func (id AgentID) IsAncestorOf(other AgentID) bool {
	return len(other) > len(id) && other[len(id)] == '/' && other[:len(id)] == id
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// Status is where an agent is in its life.
type Status string

// Agent statuses.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusWaiting   Status = "waiting"
	StatusDone      Status = "done"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether the status is final.
func (s Status) Terminal() bool {
	return s == StatusDone || s == StatusFailed || s == StatusCancelled
}

// A Finding is a noteworthy report a child produced, kept for review
// (agents with emitStructuredFindings).
type Finding struct {
	Agent   AgentID `json:"agent"`
	Title   string  `json:"title"`
	Content string  `json:"content"`
}
