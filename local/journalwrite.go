package local

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/jsonw"
	"github.com/cadre-ai/cadre/loop"
)

// appendInput appends the JSON of an input that asReadBack takes as it is,
// byte for byte as encoding/json writes it, for the kinds an agent
// journals most (a start, a model's reply, tool results, a child's
// spawning, report and end). It reports false for the other kinds, which
// roundTrip hands to encoding/json. TestRoundTripProperty holds it to
// json.Marshal on random inputs.
func appendInput(b []byte, in loop.Input, c *stringCache) ([]byte, bool) {
	switch v := in.(type) {
	case loop.Start:
		return appendStart(b, &v, c)
	case loop.ModelResult:
		return appendModelResult(b, &v)
	case loop.ToolResults:
		b = append(b, `{"results":`...)
		if v.Results == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i := range v.Results {
				r := &v.Results[i]
				if r.Media != nil {
					return b, false
				}
				if i > 0 {
					b = append(b, ',')
				}
				b = str(append(b, `{"call_id":`...), r.CallID)
				b = str(append(b, `,"content":`...), r.Content)
				if r.IsError {
					b = append(b, `,"is_error":true`...)
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		return append(b, '}'), true
	case loop.Spawned:
		b = str(append(b, `{"ref":`...), v.Ref)
		b = str(append(b, `,"child":`...), string(v.Child))
		b = optStr(b, `,"err":`, v.Err)
		return append(b, '}'), true
	case loop.ChildReport:
		b = str(append(b, `{"child":`...), string(v.Child))
		b = str(append(b, `,"text":`...), v.Text)
		b = optBool(b, `,"failed":true`, v.Failed)
		b = optBool(b, `,"cancelled":true`, v.Cancelled)
		b = optBool(b, `,"incomplete":true`, v.Incomplete)
		b = optInt(b, `,"round":`, int64(v.Round))
		return append(b, '}'), true
	case loop.ChildEnded:
		b = str(append(b, `{"child":`...), string(v.Child))
		b = str(append(b, `,"status":`...), string(v.Status))
		b = optStr(b, `,"error":`, v.Error)
		return append(b, '}'), true
	}
	return b, false
}

func appendStart(b []byte, s *loop.Start, sc *stringCache) ([]byte, bool) {
	c := &s.Config
	b = str(append(b, `{"config":{"id":`...), string(c.ID))
	b = optStr(b, `,"parent":`, string(c.Parent))
	b = strconv.AppendInt(append(b, `,"depth":`...), int64(c.Depth), 10)
	b = strconv.AppendInt(append(b, `,"max_depth":`...), int64(c.MaxDepth), 10)
	b = str(append(b, `,"definition":`...), c.Definition)
	b = optStr(b, `,"model":`, c.Model)
	b = sc.appendString(append(b, `,"system":`...), c.System)
	if len(c.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range c.Tools {
			t := &c.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = str(append(b, `{"name":`...), t.Name)
			b = sc.appendString(append(b, `,"description":`...), t.Description)
			b = append(append(b, `,"parameters":`...), t.Parameters...) // compact: see sameRaw
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(c.Withheld) > 0 {
		b = strs(append(b, `,"withheld":`...), c.Withheld)
	}
	b = optBool(b, `,"delegate":true`, c.Delegate)
	b = append(b, `,"delegation":`...)
	if c.Delegation == nil {
		b = append(b, "null"...)
	} else {
		b = strs(b, c.Delegation)
	}
	if len(c.Rules) > 0 {
		b = append(b, `,"rules":[`...)
		for i := range c.Rules {
			rs := &c.Rules[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = str(append(b, `{"definition":`...), rs.Definition)
			b = append(b, `,"rules":`...)
			if rs.Rules == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '[')
				for j := range rs.Rules {
					r := &rs.Rules[j]
					if j > 0 {
						b = append(b, ',')
					}
					b = str(append(b, `{"tool":`...), r.Tool)
					b = optStr(b, `,"pattern":`, r.Pattern)
					b = optStr(b, `,"syntax":`, string(r.Syntax))
					b = str(append(b, `,"action":`...), string(r.Action))
					b = optStr(b, `,"source":`, r.Source)
					b = optStr(b, `,"where":`, r.Where)
					b = optStr(b, `,"group":`, r.Group)
					b = append(b, '}')
				}
				b = append(b, ']')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(c.Catalog) > 0 {
		b = append(b, `,"catalog":[`...)
		for i := range c.Catalog {
			e := &c.Catalog[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = str(append(b, `{"name":`...), e.Name)
			b = optBool(b, `,"internal":true`, e.Internal)
			b = optBool(b, `,"onboarding_required":true`, e.OnboardingRequired)
			b = optBool(b, `,"no_onboarding":true`, e.NoOnboarding)
			b = optBool(b, `,"ask_caller":true`, e.AskCaller)
			b = optInt(b, `,"max_questions":`, int64(e.MaxQuestions))
			b = optBool(b, `,"background":true`, e.Background)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = optStr(b, `,"report":`, string(c.Report))
	b = optStr(b, `,"protocol":`, string(c.Protocol))
	b = strconv.AppendInt(append(b, `,"max_turns":`...), int64(c.MaxTurns), 10)
	b = optInt(b, `,"timeout":`, int64(c.Timeout))
	b = optBool(b, `,"say":true`, c.Say)
	b = optInt(b, `,"max_tokens":`, int64(c.MaxTokens))
	if c.Temperature != nil {
		var ok bool
		if b, ok = jsonw.AppendFloat(append(b, `,"temperature":`...), *c.Temperature); !ok {
			return b, false
		}
	}
	b = optStr(b, `,"mode":`, string(c.Mode))
	b = optBool(b, `,"ask_caller":true`, c.AskCaller)
	b = optInt(b, `,"max_questions":`, int64(c.MaxQuestions))
	if len(c.OutputSchema) > 0 {
		b = append(append(b, `,"output_schema":`...), c.OutputSchema...) // compact: see sameRaw
	}
	b = optBool(b, `,"end_on_report":true`, c.EndOnReport)
	b = str(append(b, `},"task":`...), s.Task)
	b = append(b, `,"messages":`...)
	if s.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range s.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendMessage(b, &s.Messages[i])
		}
		b = append(b, ']')
	}
	b = optStr(b, `,"config_from":`, string(s.ConfigFrom))
	return append(b, '}'), true
}

func appendModelResult(b []byte, m *loop.ModelResult) ([]byte, bool) {
	b = append(b, '{')
	if r := m.Response; r != nil {
		b = appendMessage(append(b, `{"response":{"message":`[1:]...), &r.Message)
		b = strconv.AppendInt(append(b, `,"usage":{"input_tokens":`...), r.Usage.InputTokens, 10)
		b = strconv.AppendInt(append(b, `,"output_tokens":`...), r.Usage.OutputTokens, 10)
		b = optInt(b, `,"cached_input_tokens":`, r.Usage.CachedInputTokens)
		b = append(b, '}')
		b = optStr(b, `,"stop_reason":`, r.StopReason)
		b = optStr(b, `,"model":`, r.Model)
		b = append(b, '}')
	}
	// The fields after the first start with a comma; the first drops it.
	n := len(b)
	b = optStr(b, `,"err":`, m.Err)
	b = optBool(b, `,"interrupted":true`, m.Interrupted)
	b = optBool(b, `,"budget_exhausted":true`, m.BudgetExhausted)
	if m.Response == nil && len(b) > n {
		b = append(b[:n], b[n+1:]...)
	}
	return append(b, '}'), true
}

func appendMessage(b []byte, m *cadre.Message) []byte {
	b = str(append(b, `{"role":`...), string(m.Role))
	b = optStr(b, `,"content":`, m.Content)
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			c := &m.ToolCalls[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = str(append(b, `{"id":`...), c.ID)
			b = str(append(b, `,"name":`...), c.Name)
			b = str(append(b, `,"arguments":`...), c.Arguments)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = optStr(b, `,"tool_call_id":`, m.ToolCallID)
	b = optStr(b, `,"tool_name":`, m.ToolName)
	b = optBool(b, `,"is_error":true`, m.IsError)
	if len(m.Media) > 0 {
		b = append(b, `,"media":[`...)
		for i := range m.Media {
			md := &m.Media[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = str(append(b, `{"kind":`...), string(md.Kind))
			b = str(append(b, `,"mime_type":`...), md.MIMEType)
			b = append(b, `,"data":`...)
			if md.Data == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '"')
				b = base64.StdEncoding.AppendEncode(b, md.Data)
				b = append(b, '"')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// journalBufs are the buffers appendInput writes into, copied out at the
// size the entry has.
var journalBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxJournalBuf is the largest buffer journalBufs keeps.
const maxJournalBuf = 64 << 10

// giveJournalBuf gives a buffer back to journalBufs; one grown by a huge
// entry is let go.
func giveJournalBuf(buf *[]byte) {
	if cap(*buf) <= maxJournalBuf {
		*buf = (*buf)[:0]
		journalBufs.Put(buf)
	}
}

func str(b []byte, s string) []byte { return jsonw.AppendString(b, s) }

func strs(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = str(b, s)
	}
	return append(b, ']')
}

func optStr(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return str(append(b, key...), s)
}

func optBool(b []byte, field string, v bool) []byte {
	if !v {
		return b
	}
	return append(b, field...)
}

func optInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

// A stringCache keeps the JSON of the long strings of a run's journal
// entries, which repeat from agent to agent (the system prompt of every
// worker of a definition, a tool's description). It is keyed by the string
// itself, and strings do not change, so a hit is always right. It keeps
// strings of at least stringCacheMin bytes, stringCacheBytes in all (each
// counted with its JSON); nil keeps nothing. A run's is dropped when it
// ends.
type stringCache struct {
	m    sync.Map // string → []byte, its JSON
	size atomic.Int64
}

const (
	stringCacheMin   = 256
	stringCacheBytes = 1 << 20
)

func (c *stringCache) appendString(b []byte, s string) []byte {
	if c == nil || len(s) < stringCacheMin {
		return str(b, s)
	}
	if q, ok := c.m.Load(s); ok {
		return append(b, q.([]byte)...)
	}
	n := len(b)
	b = str(b, s)
	if size := int64(len(s) + len(b) - n); c.size.Load()+size <= stringCacheBytes {
		if _, loaded := c.m.LoadOrStore(s, bytes.Clone(b[n:])); !loaded {
			c.size.Add(size)
		}
	}
	return b
}
