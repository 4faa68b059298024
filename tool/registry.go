package tool

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cadre-ai/cadre"
)

// ErrDuplicate is wrapped by Registry.Add when a tool's name is taken.
var ErrDuplicate = errors.New("tool: duplicate tool name")

// A Registry holds tools by name. The zero value is an empty registry ready
// to use. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]cadre.Tool
}

// NewRegistry returns a registry holding tools. It fails on the first
// tool that Add refuses.
func NewRegistry(tools ...cadre.Tool) (*Registry, error) {
	r := &Registry{}
	for _, t := range tools {
		if err := r.Add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers t under the name of its Spec. A nil tool, an empty name and
// a name already registered are errors; the last wraps ErrDuplicate.
func (r *Registry) Add(t cadre.Tool) error {
	if t == nil {
		return errors.New("tool: cannot register a nil tool")
	}
	name := t.Spec().Name
	if name == "" {
		return fmt.Errorf("tool: cannot register a tool with an empty name (%T): set its Spec().Name", t)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[name]; dup {
		return fmt.Errorf("%w: %q is already registered; give one of the tools another name", ErrDuplicate, name)
	}
	if r.tools == nil {
		r.tools = make(map[string]cadre.Tool)
	}
	r.tools[name] = t
	return nil
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (cadre.Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Names returns the names of all registered tools, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Tools returns the named tools sorted by name, or every tool when names is
// nil. Names that are not registered are skipped, and so are repeats.
func (r *Registry) Tools(names []string) []cadre.Tool {
	if names == nil {
		names = r.Names()
	} else {
		names = slices.Clone(names)
		slices.Sort(names)
		names = slices.Compact(names)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]cadre.Tool, 0, len(names))
	for _, n := range names {
		if t, ok := r.tools[n]; ok {
			out = append(out, t)
		}
	}
	return out
}

// Specs returns the specs of the named tools sorted by name, or of every
// tool when names is nil. Names that are not registered are skipped. The
// order does not depend on the order of names, so requests built from it
// are stable.
func (r *Registry) Specs(names []string) []cadre.ToolSpec {
	tools := r.Tools(names)
	out := make([]cadre.ToolSpec, len(tools))
	for i, t := range tools {
		out[i] = t.Spec()
	}
	return out
}
