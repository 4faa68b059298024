package agentdef

import (
	"embed"
	"path"

	"github.com/cadre-ai/cadre"
)

// The built-in agents. research-assistant, code-analyst and summarizer are
// also what Init writes into a project; general-purpose is the agent
// start_background_agent uses when none is named.
//
//go:embed stock/*.md
var stock embed.FS

// stockAgents are the files Init copies, in the order it writes them.
func stockAgents() []string {
	return []string{"research-assistant.md", "code-analyst.md", "summarizer.md"}
}

// GeneralPurpose is the name of the built-in agent that inherits its
// parent's tools, used when a background agent is started without a name.
const GeneralPurpose = "general-purpose"

// Builtin returns cadre's built-in agents, sorted by name, parsed anew on
// every call: research-assistant, code-analyst and summarizer (the stock
// agents Init writes into a project) and general-purpose, which has no tools
// list and so inherits its parent's tools. Their Scope is "builtin" and
// their File "builtin:NAME.md".
func Builtin() []*cadre.Definition {
	entries, err := stock.ReadDir("stock")
	if err != nil {
		return nil
	}
	var defs []*cadre.Definition
	for _, e := range entries {
		data, err := stock.ReadFile(path.Join("stock", e.Name()))
		if err != nil {
			continue
		}
		def, _ := Parse("builtin:"+e.Name(), data, ParseOptions{Scope: ScopeBuiltin})
		if def != nil {
			defs = append(defs, def)
		}
	}
	return defs
}
