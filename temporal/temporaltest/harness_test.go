package temporaltest

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/temporal"
)

// server is the Temporal server every test of the package uses; each
// engine gets a task queue of its own.
var server *temporaltest.TestServer

func TestMain(m *testing.M) {
	server = temporaltest.NewServer()
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

var queues atomic.Int64

// queue returns a task queue no other engine of the test process uses.
func queue() string { return fmt.Sprintf("cadre-test-%d", queues.Add(1)) }

// testClient returns a client of the embedded server, closed at the end
// of the test.
func testClient(t testing.TB) client.Client {
	c := server.NewClientWithOptions(client.Options{})
	t.Cleanup(c.Close)
	return c
}

// setup is what an engine under test is made from.
type setup struct {
	Model        cadre.Model
	Definitions  []*cadre.Definition
	Limits       cadre.Limits
	Store        cadre.Store
	HistoryLimit int
	Workers      int // in-process workers; 0 means one
	Protocol     cadre.Protocol
	Queue        string
	Tools        []cadre.Tool
	// RootDefinition is the root agent's definition; nil means the default.
	RootDefinition *cadre.Definition
	// AnswerQuestions lets the root's questions wait for Engine.Answer.
	AnswerQuestions bool
	// WorkerLimits, when set, are the workers' limits, Limits then being
	// those of the engine that starts runs.
	WorkerLimits *cadre.Limits
}

// newEngine starts workers for s and returns an engine of the same
// configuration, both stopped at the end of the test.
func newEngine(t testing.TB, s setup) (*temporal.Engine, temporal.Config) {
	t.Helper()
	if s.Store == nil {
		s.Store = memstore.New()
	}
	if s.Queue == "" {
		s.Queue = queue()
	}
	cfg := temporal.Config{
		Client: testClient(t), TaskQueue: s.Queue, Store: s.Store, HistoryLimit: s.HistoryLimit,
		HeartbeatTimeout: 5 * time.Second, AnswerQuestions: s.AnswerQuestions,
		Local: local.Config{Models: local.OneModel{Name: "scripted", Model: s.Model}, Definitions: s.Definitions, Limits: s.Limits,
			Protocol: s.Protocol, Tools: s.Tools, RootDefinition: s.RootDefinition},
	}
	wcfg := cfg
	if s.WorkerLimits != nil {
		wcfg.Local.Limits = *s.WorkerLimits
	}
	for range max(s.Workers, 1) {
		w, err := temporal.NewWorker(wcfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
	}
	e, err := temporal.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e, cfg
}
