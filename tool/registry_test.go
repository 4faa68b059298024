package tool

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/google/go-cmp/cmp"
)

func TestRegistryAdd(t *testing.T) {
	var r Registry
	if err := r.Add(named("b")); err != nil {
		t.Fatal(err)
	}
	if err := r.Add(named("a")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tool cadre.Tool
		dup  bool
	}{
		{name: "duplicate", tool: named("a"), dup: true},
		{name: "nil", tool: nil},
		{name: "empty_name", tool: named("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Add(tt.tool)
			if err == nil {
				t.Fatal("Add succeeded, want an error")
			}
			if got := errors.Is(err, ErrDuplicate); got != tt.dup {
				t.Errorf("errors.Is(%v, ErrDuplicate) = %v, want %v", err, got, tt.dup)
			}
		})
	}
	if diff := cmp.Diff([]string{"a", "b"}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

func TestRegistryLookups(t *testing.T) {
	r, err := NewRegistry(named("write_file"), named("read_file"), named("list_files"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewRegistry(named("x"), named("x")); !errors.Is(err, ErrDuplicate) {
		t.Errorf("NewRegistry with a duplicate: %v, want ErrDuplicate", err)
	}
	if got, ok := r.Get("read_file"); !ok || got.Spec().Name != "read_file" {
		t.Errorf("Get(read_file) = %v, %v", got, ok)
	}
	if _, ok := r.Get("nope"); ok {
		t.Error("Get(nope) found a tool")
	}
	specNames := func(specs []cadre.ToolSpec) []string {
		var out []string
		for _, s := range specs {
			out = append(out, s.Name)
		}
		return out
	}
	tests := []struct {
		name  string
		names []string
		want  []string
	}{
		{name: "all", names: nil, want: []string{"list_files", "read_file", "write_file"}},
		{name: "order_of_request_ignored", names: []string{"write_file", "read_file"}, want: []string{"read_file", "write_file"}},
		{name: "unknown_and_repeats_skipped", names: []string{"read_file", "nope", "read_file"}, want: []string{"read_file"}},
		{name: "empty_means_none", names: []string{}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, specNames(r.Specs(tt.names))); diff != "" {
				t.Errorf("Specs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegistryConcurrent(t *testing.T) {
	var r Registry
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				if err := r.Add(named(fmt.Sprintf("t%d_%d", i, j))); err != nil {
					t.Error(err)
				}
				r.Get("t0_0")
				r.Specs(nil)
			}
		})
	}
	wg.Wait()
	if got := len(r.Names()); got != 160 {
		t.Errorf("%d tools registered, want 160", got)
	}
}
