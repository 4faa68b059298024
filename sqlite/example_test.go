package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/sqlite"
)

func Example() {
	dir, err := os.MkdirTemp("", "cadre-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, ".cadre", "cadre.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "run-1", Task: "Summarise the README", Status: cadre.StatusRunning, Started: time.Now()}); err != nil {
		fmt.Println(err)
		return
	}
	// One batch is one transaction: both entries are kept, or neither.
	err = s.Append(ctx, []cadre.JournalEntry{
		{Run: "run-1", Agent: cadre.RootID, Seq: 1, Kind: "start", Data: []byte(`{}`), Time: time.Now()},
		{Run: "run-1", Agent: cadre.RootID, Seq: 2, Kind: "model_result", Data: []byte(`{"text":"Done."}`), Time: time.Now()},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	j, _ := s.Journal(ctx, "run-1", cadre.RootID)
	for _, e := range j {
		fmt.Println(e.Seq, e.Kind, string(e.Data))
	}

	_, err = s.GetRun(ctx, "run-2")
	fmt.Println(errors.Is(err, cadre.ErrNotFound))
	// Output:
	// 1 start {}
	// 2 model_result {"text":"Done."}
	// true
}
