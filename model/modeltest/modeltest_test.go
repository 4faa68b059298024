package modeltest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/model/modeltest"
	"github.com/cadre-ai/cadre/redact"
)

// toy is a small provider with a wire format of its own, built on
// model.Stream as the real providers are. With bug set it gets one thing
// wrong, and the suite must notice.
type toy struct {
	o   modeltest.Options
	bug string
	// kept is the text of the last try, for bug KeepsBrokenText.
	mu   sync.Mutex
	kept string
}

// event is one server-sent event of the toy wire format.
type event struct {
	Text string `json:"text,omitempty"`
	Tool *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"tool,omitempty"`
	Args  string `json:"args,omitempty"`
	Model string `json:"model,omitempty"`
	Error string `json:"error,omitempty"`
	End   *struct {
		Stop  string       `json:"stop"`
		Usage *cadre.Usage `json:"usage,omitempty"`
	} `json:"end,omitempty"`
}

func (p *toy) Stream(ctx context.Context, req *cadre.Request) iter.Seq2[*cadre.Chunk, error] {
	pol := p.o.Retry
	if p.bug == "NoRetry" {
		pol.MaxAttempts = 1
	}
	var r *redact.Redactor
	if p.bug != "ShowsKey" {
		r = redact.New(append(redact.URLSecrets(p.o.BaseURL), p.o.APIKey)...)
	}
	return model.Stream(ctx, model.Call{
		Provider:     "toy",
		Policy:       pol,
		StallTimeout: p.o.StallTimeout,
		Hint:         p.hint,
		Redactor:     r,
		Attempt: func(ctx context.Context, t *model.Try) (*cadre.Response, error) {
			return p.attempt(ctx, req, t)
		},
	})
}

func (p *toy) attempt(ctx context.Context, req *cadre.Request, t *model.Try) (*cadre.Response, error) {
	sent := *req
	if p.bug == "NoSystem" {
		sent.System = ""
	}
	body, err := json.Marshal(map[string]any{"model": p.o.Model, "stream": true, "request": &sent})
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.o.BaseURL+"/toy", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Authorization", "Bearer "+p.o.APIKey)
	resp, err := t.Middleware(hreq, http.DefaultClient.Do)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		var e struct {
			Message string `json:"message"`
		}
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &e)
		h := resp.Header
		if p.bug == "DropHeaders" {
			h = http.Header{}
		}
		return nil, &model.ServerError{Status: resp.StatusCode, Message: e.Message, Header: h}
	}
	msg := cadre.Message{Role: cadre.RoleAssistant}
	if p.bug == "KeepsBrokenText" {
		// The text of a try that broke off stays in the reply.
		p.mu.Lock()
		msg.Content = p.kept
		p.mu.Unlock()
	}
	var (
		usage    cadre.Usage
		stop     string
		done     bool
		answered string
	)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			if p.bug == "InvalidIsFinal" {
				return nil, errors.New("event is not JSON")
			}
			return nil, fmt.Errorf("event is not valid JSON: %w", model.ErrInvalidReply)
		}
		switch {
		case ev.Model != "":
			answered = ev.Model
		case ev.Error != "":
			return nil, &model.ServerError{Message: ev.Error}
		case ev.Text != "":
			msg.Content += ev.Text
			if p.bug == "KeepsBrokenText" {
				p.mu.Lock()
				p.kept = msg.Content
				p.mu.Unlock()
			}
			if !t.Emit(ev.Text) {
				return nil, context.Canceled
			}
		case ev.Tool != nil:
			msg.ToolCalls = append(msg.ToolCalls, cadre.ToolCall{ID: ev.Tool.ID, Name: ev.Tool.Name})
		case ev.Args != "" && len(msg.ToolCalls) > 0:
			last := &msg.ToolCalls[len(msg.ToolCalls)-1]
			if p.bug == "LastPieceOnly" {
				last.Arguments = ev.Args
			} else {
				last.Arguments += ev.Args
			}
		case ev.End != nil:
			stop, done = ev.End.Stop, true
			if ev.End.Usage != nil && p.bug != "NoUsage" {
				usage = *ev.End.Usage
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !done && p.bug != "ShortReplies" {
		return nil, fmt.Errorf("no end event: %w", cadre.ErrIncompleteStream)
	}
	for i := range msg.ToolCalls {
		if msg.ToolCalls[i].Arguments == "" {
			msg.ToolCalls[i].Arguments = "{}"
		}
	}
	if msg.Content == "" && len(msg.ToolCalls) == 0 {
		if stop == "length" {
			return nil, fmt.Errorf("stopped at the limit: %w", model.ErrMaxTokens)
		}
		if p.bug == "EmptyIsError" {
			return nil, fmt.Errorf("empty reply")
		}
	}
	if usage == (cadre.Usage{}) {
		usage = model.EstimateUsage(req, &msg)
	}
	if p.bug == "NoStopReason" {
		stop = ""
	}
	if p.bug == "AskedModel" {
		answered = p.o.Model
	}
	return &cadre.Response{Message: msg, Usage: usage, StopReason: stop, Model: answered}, nil
}

func (p *toy) hint(err error, status int) string {
	if p.bug == "NoHints" {
		return ""
	}
	switch status {
	case 401:
		return "check TOY_API_KEY"
	case 403:
		return fmt.Sprintf("check TOY_API_KEY and the model name %q", p.o.Model)
	case 404:
		return fmt.Sprintf("check the model name %q", p.o.Model)
	}
	return ""
}

func writeEvent(w http.ResponseWriter, ev any) {
	b, _ := json.Marshal(ev)
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func writeReply(w http.ResponseWriter, r modeltest.Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	writeEvent(w, map[string]string{"model": r.AnsweringModel()})
	for _, t := range r.Text {
		writeEvent(w, map[string]string{"text": t})
	}
	if r.Invalid != "" {
		fmt.Fprintf(w, "data: %s\n\n", r.Invalid)
		return
	}
	if r.ErrorEvent != "" {
		writeEvent(w, map[string]string{"error": r.ErrorEvent})
		return
	}
	if r.Cut {
		return
	}
	for _, tc := range r.ToolCalls {
		writeEvent(w, map[string]any{"tool": map[string]string{"id": tc.ID, "name": tc.Name}})
		for _, a := range tc.Arguments {
			writeEvent(w, map[string]string{"args": a})
		}
	}
	end := map[string]any{"stop": "stop"}
	if r.Truncated {
		end["stop"] = "length"
	}
	if !r.NoUsage {
		end["usage"] = r.Usage
	}
	writeEvent(w, map[string]any{"end": end})
}

func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": message})
}

func harness(bug string) modeltest.Harness {
	return modeltest.Harness{
		New:        func(o modeltest.Options) cadre.Model { return &toy{o: o, bug: bug} },
		WriteReply: writeReply,
		WriteError: writeError,
		KeyVar:     "TOY_API_KEY",
	}
}

func TestToyPasses(t *testing.T) {
	modeltest.Run(t, harness(""))
}

// TestBrokenProviderHelper runs the suite against one broken provider when
// the test binary is started by TestSuiteCatches.
func TestBrokenProviderHelper(t *testing.T) {
	bug := os.Getenv("MODELTEST_BUG")
	if bug == "" {
		t.Skip("run by TestSuiteCatches")
	}
	modeltest.Run(t, harness(bug))
}

func TestSuiteCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the test binary once per broken provider")
	}
	for _, tc := range []struct {
		bug      string
		failures []string // subtests that must fail
	}{
		{"NoRetry", []string{"RateLimitedThenSuccess", "RateLimitedRetryAfterDate", "RateLimitedWithoutRetryAfter", "ServerErrorExhausted",
			"ServerErrorStormThenSuccess", "ServerErrorStormExhausted", "CutBeforeTextIsRetried", "DroppedConnectionIsRetried",
			"ResetConnectionIsRetried", "ErrorEventBeforeTextIsRetried", "InvalidJSONBeforeTextIsRetried", "StallBeforeHeadersIsRetried",
			"StallAfterHeadersIsRetried", "CutAfterTextIsRetried", "ClosedAfterTextIsRetried", "ResetAfterTextIsRetried",
			"ErrorEventAfterTextIsRetried", "InvalidJSONAfterTextIsRetried", "StallAfterTextIsRetried", "CutAfterTextEveryTime"}},
		{"DropHeaders", []string{"RateLimitedThenSuccess", "RateLimitedRetryAfterDate"}},
		{"ShortReplies", []string{"CutAfterTextIsRetried", "CutBeforeTextIsRetried", "CutAfterTextEveryTime"}},
		{"KeepsBrokenText", []string{"CutAfterTextIsRetried", "ErrorEventAfterTextIsRetried", "StallAfterTextIsRetried"}},
		{"InvalidIsFinal", []string{"InvalidJSONBeforeTextIsRetried", "InvalidJSONAfterTextIsRetried", "InvalidJSONEveryTime"}},
		{"AskedModel", []string{"AnsweredByAnotherModel"}},
		{"NoHints", []string{"Unauthorized", "Forbidden", "NotFound"}},
		{"LastPieceOnly", []string{"ToolCalls", "TextThenToolCalls", "InvalidToolArgumentsPassedOn"}},
		{"NoUsage", []string{"Usage"}},
		{"NoStopReason", []string{"PlainReply", "Truncated"}},
		{"NoSystem", []string{"RequestShape"}},
		{"EmptyIsError", []string{"EmptyReply"}},
		{"ShowsKey", []string{"SecretsHiddenInErrors"}},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenProviderHelper$", "-test.v")
			cmd.Env = append(os.Environ(), "MODELTEST_BUG="+tc.bug)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a provider with bug %s:\n%s", tc.bug, out)
			}
			for _, name := range tc.failures {
				if !strings.Contains(string(out), "--- FAIL: TestBrokenProviderHelper/"+name+" ") {
					t.Errorf("subtest %s did not fail for bug %s", name, tc.bug)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}
