package tool

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestApprove(t *testing.T) {
	errPrompt := errors.New("terminal closed")
	yes := func(context.Context, ApprovalRequest) (bool, error) { return true, nil }
	no := func(context.Context, ApprovalRequest) (bool, error) { return false, nil }
	fails := func(context.Context, ApprovalRequest) (bool, error) { return false, errPrompt }
	tests := []struct {
		name     string
		mode     ApprovalMode
		prompt   func(context.Context, ApprovalRequest) (bool, error)
		ok       bool
		denial   string // substring of the denial text
		wantErr  error
		anyError bool
	}{
		{name: "all", mode: ApproveAll, prompt: no, ok: true},
		{name: "none", mode: ApproveNone, prompt: yes, denial: "approval mode none"},
		{name: "ask_without_prompter", mode: ApproveAsk, denial: "run cadre with --approve=all to allow writes and commands, or approve them interactively on a terminal"},
		{name: "empty_mode_is_ask", mode: "", denial: "--approve=all"},
		{name: "ask_yes", mode: ApproveAsk, prompt: yes, ok: true},
		{name: "ask_no", mode: ApproveAsk, prompt: no, denial: "The user declined this write_file call"},
		{name: "ask_error", mode: ApproveAsk, prompt: fails, wantErr: errPrompt},
		{name: "unknown_mode", mode: "sometimes", prompt: yes, anyError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &Approver{Mode: tt.mode, Prompt: tt.prompt}
			ok, denial, err := a.Approve(context.Background(), ApprovalRequest{Agent: "root", Tool: "write_file", Summary: "write a.txt"})
			if tt.wantErr != nil || tt.anyError {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Fatalf("Approve error = %v, want %v", err, tt.wantErr)
				}
				if ok {
					t.Error("approved despite an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.ok {
				t.Fatalf("Approve = %v, want %v", ok, tt.ok)
			}
			if !strings.Contains(denial, tt.denial) || (tt.ok && denial != "") {
				t.Errorf("denial %q, want it to contain %q", denial, tt.denial)
			}
		})
	}
}

func TestParseApprovalMode(t *testing.T) {
	for in, want := range map[string]ApprovalMode{"": ApproveAsk, "ask": ApproveAsk, "all": ApproveAll, "none": ApproveNone} {
		if got, err := ParseApprovalMode(in); err != nil || got != want {
			t.Errorf("ParseApprovalMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseApprovalMode("yes"); err == nil || !strings.Contains(err.Error(), "use ask, all or none") {
		t.Errorf("ParseApprovalMode(yes) = %v", err)
	}
}

func TestApproveSerialisesPrompts(t *testing.T) {
	var inFlight, most, asked atomic.Int32
	a := &Approver{Mode: ApproveAsk, Prompt: func(_ context.Context, req ApprovalRequest) (bool, error) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		for range 50 {
			runtime.Gosched()
		}
		asked.Add(1)
		inFlight.Add(-1)
		return req.Summary == "even", nil
	}}
	var wg sync.WaitGroup
	var approved atomic.Int32
	for i := range 32 {
		wg.Go(func() {
			s := "odd"
			if i%2 == 0 {
				s = "even"
			}
			ok, _, err := a.Approve(context.Background(), ApprovalRequest{Tool: "run_command", Summary: s})
			if err != nil {
				t.Error(err)
			}
			if ok {
				approved.Add(1)
			}
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d prompts ran at once, want 1", most.Load())
	}
	if asked.Load() != 32 || approved.Load() != 16 {
		t.Errorf("asked %d, approved %d; want 32, 16", asked.Load(), approved.Load())
	}
}

func TestApproveCancelledWhileWaiting(t *testing.T) {
	inside := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int32
	a := &Approver{Mode: ApproveAsk, Prompt: func(context.Context, ApprovalRequest) (bool, error) {
		if calls.Add(1) == 1 {
			close(inside)
			<-release
		}
		return true, nil
	}}
	done := make(chan error, 1)
	go func() {
		_, _, err := a.Approve(context.Background(), ApprovalRequest{Tool: "first"})
		done <- err
	}()
	<-inside
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, _, err := a.Approve(ctx, ApprovalRequest{Tool: "second"})
	if ok || !errors.Is(err, context.Canceled) {
		t.Errorf("Approve with a cancelled context = %v, %v; want false, context.Canceled", ok, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("Prompt called %d times, want 1", calls.Load())
	}
	// The turn was handed back: another prompt can run.
	if ok, _, err := a.Approve(context.Background(), ApprovalRequest{Tool: "third"}); !ok || err != nil {
		t.Errorf("Approve after = %v, %v", ok, err)
	}
}
