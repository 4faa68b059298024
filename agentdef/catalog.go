package agentdef

import (
	"slices"
	"strings"

	"github.com/cadre-ai/cadre"
)

// A Catalog is the set of agent definitions in effect, by name; names are
// compared ignoring case, so Reviewer and reviewer are one agent. It is
// immutable and safe for concurrent use; the definitions it returns are
// shared and must not be modified.
type Catalog struct {
	byName     map[string]*cadre.Definition // by lower-case name
	sorted     []*cadre.Definition
	overridden []*cadre.Definition
	plugins    []Plugin // the plugins Load found, for LoadSkills
}

// Plugins returns the plugins whose agents Load read, for LoadSkills to
// take their skills from without looking for them again.
func (c *Catalog) Plugins() []Plugin { return c.plugins }

// NewCatalog makes a catalog of defs. A later definition replaces an
// earlier one of the same name (ignoring case); the replaced ones are listed
// by Overridden.
// Nil definitions and definitions without a name are ignored.
func NewCatalog(defs []*cadre.Definition) *Catalog {
	c := &Catalog{byName: map[string]*cadre.Definition{}}
	for _, d := range defs {
		c.put(d)
	}
	c.seal()
	return c
}

func (c *Catalog) put(d *cadre.Definition) (replaced *cadre.Definition) {
	if d == nil || d.Name == "" {
		return nil
	}
	key := strings.ToLower(d.Name)
	if old, ok := c.byName[key]; ok {
		c.overridden = append(c.overridden, old)
		replaced = old
	}
	c.byName[key] = d
	return replaced
}

func (c *Catalog) seal() {
	c.sorted = make([]*cadre.Definition, 0, len(c.byName))
	for _, d := range c.byName {
		c.sorted = append(c.sorted, d)
	}
	slices.SortFunc(c.sorted, func(a, b *cadre.Definition) int { return strings.Compare(a.Name, b.Name) })
}

// Get returns the definition called name, ignoring case.
func (c *Catalog) Get(name string) (*cadre.Definition, bool) {
	if c == nil {
		return nil, false
	}
	d, ok := c.byName[strings.ToLower(name)]
	return d, ok
}

// Len is the number of definitions.
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	return len(c.sorted)
}

// All returns every definition, sorted by name, in a new slice.
func (c *Catalog) All() []*cadre.Definition {
	if c == nil {
		return nil
	}
	return slices.Clone(c.sorted)
}

// UserFacing returns the definitions models may see and spawn, sorted by
// name.
func (c *Catalog) UserFacing() []*cadre.Definition {
	if c == nil {
		return nil
	}
	var out []*cadre.Definition
	for _, d := range c.sorted {
		if d.UserFacing() {
			out = append(out, d)
		}
	}
	return out
}

// Names returns the names of all definitions, sorted.
func (c *Catalog) Names() []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.sorted))
	for i, d := range c.sorted {
		out[i] = d.Name
	}
	return out
}

// Overridden returns the definitions that a definition of the same name
// from a nearer scope replaced, in the order they were replaced.
func (c *Catalog) Overridden() []*cadre.Definition {
	if c == nil {
		return nil
	}
	return slices.Clone(c.overridden)
}
