package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/agentdef"
)

// creatorRules parses a creator's file and returns its rules as the engine
// gives them to a definition the creator writes: one group for each field.
func creatorRules(t *testing.T, name, frontmatter string) []cadre.ToolRule {
	t.Helper()
	d, diags := agentdef.Parse(name+".md", []byte("---\nname: "+name+"\ndescription: d\n"+frontmatter+"\n---\nx\n"), agentdef.ParseOptions{})
	if d == nil {
		t.Fatalf("rejected: %v", diags)
	}
	rules := slices.Clone(d.Rules)
	for i := range rules {
		rules[i].Group = name + "/" + rules[i].Group
	}
	return rules
}

// usable is what a loaded definition lets its agent use.
func usable(d *cadre.Definition) []string {
	var out []string
	for _, t := range d.Tools {
		if !slices.Contains(d.DisallowedTools, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// The file of a created agent loads with the tools and rules of its
// definition: nothing left out to be inherited, its creator's rules
// written as the fields they came from.
func TestDefinitionFileKeepsGrants(t *testing.T) {
	for _, tc := range []struct {
		name, creator string
		tools         []string
		want          []string // in the file
	}{
		{"tools list", "tools: Read, Grep, Bash(git *), Agent(explore), spawn_agent",
			[]string{"read_file", "search_files", "run_command", "spawn_agent"}, []string{"Bash(git *)", "Agent(explore)"}},
		{"disallowed", "disallowedTools: Bash(rm *)", []string{"read_file", "run_command"}, []string{"Bash(rm *)"}},
		{"permission", "permission:\n  \"*\": allow\n  bash:\n    \"*\": ask\n    \"git *\": allow\n  edit: deny",
			[]string{"read_file", "run_command"}, []string{"git *"}},
		{"fewer tools than the creator", "tools: Read, Bash(git *)", []string{"read_file"}, []string{"Bash(git *)", "run_command"}},
		{"no tools", "tools: Read, Bash(git *)", []string{}, []string{"tools:"}},
		{"both fields", "tools: Read, Bash(git *)\npermission:\n  bash:\n    \"git push*\": deny", []string{"read_file", "run_command"}, []string{"Bash(git *)", "git push*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := &cadre.Definition{Name: "made", Description: "Made.", Prompt: "Work.\n", Tools: tc.tools, Rules: creatorRules(t, "lead", tc.creator)}
			data, err := definitionFile(def)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(data), w) {
					t.Errorf("the file does not hold %q:\n%s", w, data)
				}
			}
			got, diags := agentdef.Parse("made.md", data, agentdef.ParseOptions{})
			if got == nil {
				t.Fatalf("the file does not load: %v\n%s", diags, data)
			}
			want := slices.Sorted(slices.Values(tc.tools))
			if u := usable(got); !slices.Equal(u, want) && !(len(u) == 0 && len(want) == 0) {
				t.Errorf("the file grants %v, want %v:\n%s", u, want, data)
			}
			if a, b := ruleKinds(def.Rules), ruleKinds(got.Rules); !slices.Equal(a, b) {
				t.Errorf("rules read back differ:\n%q\n%q\n%s", a, b, data)
			}
		})
	}
}

// A definition whose tools or rules a file cannot say is not saved, and
// the reason says why.
func TestDefinitionFileRefuses(t *testing.T) {
	two := append(creatorRules(t, "lead", "tools: Bash(git *)"), creatorRules(t, "root", "tools: Bash(git status)")...)
	for _, tc := range []struct {
		name string
		def  *cadre.Definition
		want string
	}{
		{"no tools", &cadre.Definition{Name: "made", Description: "d", Prompt: "x"}, "does not list its tools"},
		{"two tools lists", &cadre.Definition{Name: "made", Description: "d", Prompt: "x", Tools: []string{"run_command"}, Rules: two},
			"two tools lists (agent lead and agent root)"},
		{"rule of a program", &cadre.Definition{Name: "made", Description: "d", Prompt: "x", Tools: []string{"run_command"},
			Rules: []cadre.ToolRule{{Tool: "run_command", Pattern: "rm *", Syntax: cadre.SyntaxCommand, Action: cadre.PermissionDeny, Group: "api"}}},
			"was not read from an agent file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := definitionFile(tc.def)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "made was not saved") {
				t.Errorf("got %v, want an error with %q\n%s", err, tc.want, data)
			}
		})
	}
}
