package memstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
	"github.com/cadre-ai/cadre/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) cadre.Store { return memstore.New() })
}

func TestClosed(t *testing.T) {
	s := memstore.New()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := context.Background()
	if err := s.CreateRun(ctx, &cadre.RunRecord{ID: "r1"}); !errors.Is(err, memstore.ErrClosed) {
		t.Errorf("CreateRun after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.ListRuns(ctx, 0); !errors.Is(err, memstore.ErrClosed) {
		t.Errorf("ListRuns after Close: got %v, want ErrClosed", err)
	}
	if err := s.Append(ctx, []cadre.JournalEntry{{Run: "r1", Agent: "root", Seq: 1}}); !errors.Is(err, memstore.ErrClosed) {
		t.Errorf("Append after Close: got %v, want ErrClosed", err)
	}
}
