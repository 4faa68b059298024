package temporaltest

import (
	"path/filepath"
	"testing"

	"github.com/cadre-ai/cadre/temporal"
)

// TestReplay replays the histories recorded from the scenario tests
// (testdata/histories; re-record them with CADRE_RECORD_HISTORIES=1) against
// the workflow code: a change that makes the code decide differently from
// what a recorded run did fails here, before it breaks runs in progress.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no recorded histories in testdata/histories: record them with CADRE_RECORD_HISTORIES=1 go test -run TestScenario")
	}
	r, err := temporal.NewReplayer()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
