package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/internal/safefile"
	"github.com/cadre-ai/cadre/internal/yamlcheck"
	"github.com/cadre-ai/cadre/tool/builtin"
)

// fileConfig is the shape of .cadre/config.yaml and ~/.cadre/config.yaml.
// Every field is optional; a later file overrides what it sets.
type fileConfig struct {
	// Model is the default model, as provider:model or a named model.
	Model string `yaml:"model"`
	// Models are named models, used for aliases, roles and per-agent choices.
	Models map[string]namedModel `yaml:"models"`
	// Providers configure how providers are reached.
	Providers map[string]providerConfig `yaml:"providers"`
	Approve   string                    `yaml:"approve"`
	Strict    *bool                     `yaml:"strict"`
	Protocol  string                    `yaml:"protocol"`
	Report    string                    `yaml:"report"`
	Say       *bool                     `yaml:"say"`
	Limits    limitsConfig              `yaml:"limits"`
	// AgentsDirs are extra folders of agent definitions.
	AgentsDirs []string `yaml:"agentsDirs"`
	// Plugins are Claude Code plugin folders (or folders holding
	// plugins) besides ~/.claude/plugins and the project's .claude/plugins.
	Plugins []string `yaml:"plugins"`
	// Store is the run store: a SQLite path, postgres://…, or "none".
	Store     string `yaml:"store"`
	Workspace string `yaml:"workspace"`
	// LeaseTTL is how long a run's lease outlives its owner, such as
	// "10s"; empty means local.DefaultLeaseTTL.
	LeaseTTL string `yaml:"leaseTTL"`
	// Files tune the file tools.
	FileTools filesConfig `yaml:"files"`
	// Agent is the definition the root agent runs as (default: the
	// generic root).
	Agent string `yaml:"agent"`
	// MCPServers are the MCP servers whose tools agents may use, by name
	// (their tools are mcp__NAME__TOOL). The project's .mcp.json adds
	// more; entries here win on the same name.
	MCPServers map[string]mcpServerConfig `yaml:"mcpServers"`
	// Sandbox is how run_command is confined: auto, bwrap or off, or a
	// map with the mode and what commands may see and change.
	Sandbox sandboxConfig `yaml:"sandbox"`
	// WebFetch configures the web_fetch tool.
	WebFetch webFetchConfig `yaml:"webFetch"`
	// Engine is where agents run: local (default) or temporal.
	Engine   string         `yaml:"engine"`
	Temporal temporalConfig `yaml:"temporal"`
	// Telemetry sends traces and metrics over OTLP (see telemetry.go).
	Telemetry telemetryConfig `yaml:"telemetry"`
	// Prices are the models' prices per million tokens, by model name.
	Prices cadre.Prices `yaml:"prices"`
	// WebSearch is the search service of the web_search tool.
	WebSearch webSearchConfig `yaml:"webSearch"`
}

// webSearchConfig is the webSearch section: which service web_search asks.
// A later file's section replaces an earlier one's whole.
type webSearchConfig struct {
	// Provider is searxng or brave.
	Provider string `yaml:"provider"`
	// URL is the SearXNG instance (or another Brave endpoint).
	URL string `yaml:"url"`
	// APIKeyEnv names the variable that holds Brave's key (default
	// BRAVE_API_KEY).
	APIKeyEnv string `yaml:"apiKeyEnv"`
}

// webFetchConfig is the webFetch section.
type webFetchConfig struct {
	// Allow opens hosts, host:port pairs, addresses and networks that
	// web_fetch refuses by default (loopback, private, link-local,
	// metadata). The files' lists add up.
	Allow []string `yaml:"allow"`
}

// mcpServerConfig is one entry of mcpServers: a program cadre starts
// (command), or a server reached over streamable HTTP (url). Values may
// use ${VAR} and ${VAR:-default}.
type mcpServerConfig struct {
	// Type is stdio or http; empty means what command or url implies.
	Type    string            `yaml:"type"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	// EnvPassthrough names more variables of cadre's environment the
	// server gets (NAME, PREFIX*, or * for all); by default it gets only
	// PATH, HOME and the like (mcp.DefaultEnv) and Env.
	EnvPassthrough []string `yaml:"envPassthrough"`
	// Cwd is the server's working directory, relative to the project;
	// empty means the project's directory.
	Cwd     string            `yaml:"cwd"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// TimeoutSeconds bounds one call of a tool of the server; 0 means
	// mcp.DefaultCallTimeout (10 minutes).
	TimeoutSeconds int `yaml:"timeoutSeconds"`

	// file is where the entry was read; problem, when set, is why the
	// server cannot be used (an entry of .mcp.json that cadre does not
	// support, reported when the server is needed).
	file    string
	problem string
}

// filesConfig is the files: section, for the file tools (read_file,
// search_files, write_file, edit_file).
type filesConfig struct {
	// AllowHardLinks lets the file tools use a file with more than one
	// hard link, which they refuse by default: its other names may lie
	// outside the workspace.
	AllowHardLinks *bool `yaml:"allowHardLinks"`
}

type namedModel struct {
	Model string `yaml:"model"`
	// ToolCalling false makes agents on this model use the text protocol.
	ToolCalling *bool `yaml:"toolCalling"`
	MaxTokens   int   `yaml:"maxTokens"`
	// Input is what the model takes: text, image, audio. Unset means
	// its provider's setting.
	Input []string `yaml:"input"`
}

// with returns m with the fields v sets.
func (m namedModel) with(v namedModel) namedModel {
	if v.Model != "" {
		m.Model = v.Model
	}
	if v.ToolCalling != nil {
		m.ToolCalling = v.ToolCalling
	}
	if v.MaxTokens != 0 {
		m.MaxTokens = v.MaxTokens
	}
	if v.Input != nil {
		m.Input = v.Input
	}
	return m
}

// with returns p with the fields v sets.
func (p providerConfig) with(v providerConfig) providerConfig {
	if v.BaseURL != "" {
		p.BaseURL = v.BaseURL
	}
	if v.APIKeyEnv != "" {
		p.APIKeyEnv = v.APIKeyEnv
	}
	if v.ToolCalling != nil {
		p.ToolCalling = v.ToolCalling
	}
	if v.Input != nil {
		p.Input = v.Input
	}
	if v.MaxAttempts != 0 {
		p.MaxAttempts = v.MaxAttempts
	}
	if v.StallTimeout != "" {
		p.StallTimeout = v.StallTimeout
	}
	return p
}

type providerConfig struct {
	BaseURL   string `yaml:"baseURL"`
	APIKeyEnv string `yaml:"apiKeyEnv"`
	// ToolCalling false: every model of this provider uses the text protocol.
	ToolCalling *bool `yaml:"toolCalling"`
	// Input is what the models of this provider take: text, image,
	// audio. Unset means the provider's default (see inputKinds).
	Input []string `yaml:"input"`
	// MaxAttempts is how many times a failed call is tried in all (429,
	// 5xx, dropped connections); 0 means the default.
	MaxAttempts int `yaml:"maxAttempts"`
	// StallTimeout gives up on a server that sends nothing for this long,
	// such as "2m"; empty means the default, "0" none.
	StallTimeout string `yaml:"stallTimeout"`
}

// stall converts StallTimeout: 0 (none) is a negative duration for the
// providers, empty is their default.
func (p providerConfig) stall() time.Duration {
	if p.StallTimeout == "" {
		return 0
	}
	d, _ := time.ParseDuration(p.StallTimeout)
	if p.StallTimeout == "0" || d == 0 {
		return -1
	}
	return d
}

type limitsConfig struct {
	MaxDepth      int   `yaml:"maxDepth"`
	MaxConcurrent int   `yaml:"maxConcurrent"`
	MaxAgents     int   `yaml:"maxAgents"`
	BudgetTokens  int64 `yaml:"budgetTokens"`
	MaxTurns      int   `yaml:"maxTurns"`
	// TimeoutSeconds is the run's time limit as a config file writes it;
	// Timeout is the one given by --timeout, which need not be a whole
	// number of seconds. The one given last counts (see timeout).
	TimeoutSeconds int           `yaml:"timeoutSeconds"`
	Timeout        time.Duration `yaml:"-" json:",omitempty"`
	// MaxQuestions is how many questions an agent may ask its caller when
	// its definition does not say.
	MaxQuestions int `yaml:"maxQuestions"`
}

// config is the merged configuration of one command.
type config struct {
	fileConfig
	// Files are the config files that were read, lowest precedence first.
	Files []string
}

// ConfigError points at the place in a config file that is wrong.
type ConfigError struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// loadConfig reads the user's then the project's config file and the
// environment. Flags are applied by each command afterwards. The
// project's settings that need trust (see trust.go) are applied only
// when the project is trusted.
func (a *app) loadConfig() (*config, error) {
	c := &config{}
	var user fileConfig
	userFile := ""
	if home := a.home(); home != "" {
		f := filepath.Join(home, ".cadre", "config.yaml")
		ok, err := readConfigFile(f, &user)
		if err != nil {
			return nil, err
		}
		if ok {
			userFile = f
		}
	}
	p, err := a.readProject()
	if err != nil {
		return nil, err
	}
	if userFile != "" && p.configPath != "" && sameFile(userFile, p.configPath) {
		// The project is the home folder (a repository of dotfiles, say):
		// its config file is the user's own.
		p.config, p.configPath = fileConfig{}, ""
	}
	proj := p.config
	if p.configPath != "" || p.mcpPath != "" {
		wd, _ := a.wd()
		uc := &config{}
		uc.merge(user)
		t := &trustCheck{a: a, user: uc, proj: p.dir, wd: wd}
		settings, safe := t.sensitive(p)
		ok, err := a.trusted(p.dir, settings)
		if err != nil {
			return nil, err
		}
		if !ok {
			proj, p.mcp = safe, nil
		}
	}
	// The servers of .mcp.json lie under what the config files set.
	for name, e := range p.mcp {
		if c.MCPServers == nil {
			c.MCPServers = map[string]mcpServerConfig{}
		}
		c.MCPServers[name] = e
	}
	if p.mcpPath != "" {
		c.Files = append(c.Files, p.mcpPath)
	}
	if userFile != "" {
		c.merge(user)
		c.Files = append(c.Files, userFile)
	}
	if p.configPath != "" {
		c.merge(proj)
		c.Files = append(c.Files, p.configPath)
	}
	if m := a.io.Getenv("CADRE_MODEL"); m != "" {
		c.Model = m
	}
	if s := a.io.Getenv("CADRE_STORE"); s != "" {
		c.Store = s
	}
	a.redact.Store(a.redactor(c))
	return c, nil
}

// sameFile tells whether the paths a and b name the same file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// maxConfigFile bounds the config files and .mcp.json cadre reads: they
// come with repositories, and are read as regular files only (a link to
// /dev/zero or a FIFO in their place is refused, not read without end or
// waited on).
const maxConfigFile = 4 << 20

// fileError says what was wrong reading file with safefile, naming it.
func fileError(file string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return err // it names the file
	case errors.Is(err, safefile.ErrTooLarge):
		return fmt.Errorf("%s is larger than %d MiB, more than a config file can be", file, maxConfigFile>>20)
	}
	return fmt.Errorf("%s %w", file, err)
}

// readConfigFile reads and checks the config file f into fc; false when
// there is no such file.
func readConfigFile(f string, fc *fileConfig) (bool, error) {
	data, err := safefile.ReadRegular(f, maxConfigFile)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read config: %w", fileError(f, err))
	}
	if err := parseConfig(f, data, fc); err != nil {
		return false, err
	}
	return true, nil
}

// readProject reads the project's config file and .mcp.json, applying
// neither.
func (a *app) readProject() (*projectFiles, error) {
	p := &projectFiles{dir: a.projectDir()}
	if p.dir == "" {
		return p, nil
	}
	f := filepath.Join(p.dir, ".cadre", "config.yaml")
	ok, err := readConfigFile(f, &p.config)
	if err != nil {
		return nil, err
	}
	if ok {
		p.configPath = f
	}
	if err := a.loadMCPJSON(p); err != nil {
		return nil, err
	}
	return p, nil
}

// checkInput checks the input list of a model or provider (where names
// it): text, image and audio.
func checkInput(file string, data []byte, where string, input []string) error {
	for _, v := range input {
		if !oneOf(v, "text", "image", "audio") {
			line, col := findListItem(data, "input", v)
			return &ConfigError{File: file, Line: line, Column: col, Msg: fmt.Sprintf("%s.input: %q is not valid; list what the model takes among text, image and audio, such as [text, image]", where, v)}
		}
	}
	return nil
}

// oneNewline ends every line of a file with \n alone: the YAML decoder
// counts the \r of a Windows line ending as a line of its own in places
// (after a comment), which would put errors on the wrong line.
func oneNewline(data []byte) []byte {
	if !bytes.ContainsRune(data, '\r') {
		return data
	}
	return bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
}

// unmarshalYAML is the YAML decoder with a panic inside it made an error:
// it is third-party code, and has panicked on malformed input (a tag on a
// value cut across lines), which must not crash cadre.
//
// A document that stands for more values than yamlcheck.MaxValues once its
// aliases are expanded is refused before it is decoded (a *yamlcheck.Error,
// which tells the line of its first alias): a project's config comes with
// the repository, and a few hundred bytes of anchors could exhaust memory.
func unmarshalYAML(data []byte, v any, opts ...yaml.DecodeOption) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML could not be read (its parser failed: %v): check the file's syntax", r)
		}
	}()
	if f, perr := parser.ParseBytes(data, 0); perr == nil {
		if err := yamlcheck.Check(f); err != nil {
			return err
		}
	}
	return yaml.UnmarshalWithOptions(data, v, opts...)
}

// yamlErrorAt fills in ce the position err gives, when it gives one.
func yamlErrorAt(ce *ConfigError, err error) bool {
	var xe *yamlcheck.Error
	if errors.As(err, &xe) {
		ce.Msg, ce.Line, ce.Column = xe.Error(), xe.Line, xe.Column
		return true
	}
	return false
}

// parseConfig decodes one config file strictly and validates its values.
func parseConfig(file string, data []byte, fc *fileConfig) error {
	data = oneNewline(data)
	if err := unmarshalYAML(data, fc, yaml.Strict()); err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			ce := &ConfigError{File: file, Msg: ye.GetMessage()}
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				ce.Line, ce.Column = tk.Position.Line, tk.Position.Column
			}
			if strings.Contains(ce.Msg, "unknown field") {
				ce.Msg += " (see the documented keys in README.md, section Configuration)"
			}
			if (strings.Contains(ce.Msg, "cannot unmarshal") || strings.Contains(ce.Msg, " was used where ")) && ce.Line > 0 {
				lines := strings.Split(string(data), "\n")
				if ce.Line <= len(lines) {
					if key, value, ok := strings.Cut(strings.TrimSpace(lines[ce.Line-1]), ":"); ok {
						want := "another kind of value"
						if _, typ, ok := strings.Cut(ce.Msg, " of type "); ok {
							want = "a value of type " + typ
						} else if _, kind, ok := strings.Cut(ce.Msg, " was used where "); ok {
							switch strings.TrimSuffix(kind, " is expected") {
							case "sequence":
								want = "a list, such as [a, b] or one item per line starting with -"
							case "mapping":
								want = "a map of keys and values, such as {key: value}"
							}
						}
						ce.Msg = fmt.Sprintf("%s: %s is not valid here; give %s", key, strings.TrimSpace(value), want)
					}
				}
			}
			return ce
		}
		ce := &ConfigError{File: file, Msg: err.Error()}
		yamlErrorAt(ce, err)
		return ce
	}
	bad := func(key, value, want string) error {
		line, col := findKey(data, key)
		return &ConfigError{File: file, Line: line, Column: col, Msg: fmt.Sprintf("%s: %q is not valid; use %s", key, value, want)}
	}
	if fc.Approve != "" && !oneOf(fc.Approve, "ask", "all", "none") {
		return bad("approve", fc.Approve, "ask, all or none")
	}
	if fc.Protocol != "" && !oneOf(fc.Protocol, "auto", "tools", "text") {
		return bad("protocol", fc.Protocol, "auto, tools or text")
	}
	if fc.Report != "" && !oneOf(fc.Report, "tool", "tag") {
		return bad("report", fc.Report, "tool or tag")
	}
	l := fc.Limits
	for _, v := range []struct {
		key string
		n   int64
	}{{"maxDepth", int64(l.MaxDepth)}, {"maxConcurrent", int64(l.MaxConcurrent)}, {"maxAgents", int64(l.MaxAgents)},
		{"maxTurns", int64(l.MaxTurns)}, {"timeoutSeconds", int64(l.TimeoutSeconds)}, {"maxQuestions", int64(l.MaxQuestions)}} {
		if v.n < 0 {
			return bad(v.key, fmt.Sprint(v.n), "a number of 1 or more (maxDepth: 0 for no subagents), or leave the key out for the default")
		}
	}
	// A limit written as 0 means what the flag of the same name means by
	// 0, never the default: no subagents for maxDepth, and a refusal for
	// the limits a run cannot work under. Leaving the key out keeps the
	// default.
	var zeros struct {
		Limits struct {
			MaxDepth      *int `yaml:"maxDepth"`
			MaxConcurrent *int `yaml:"maxConcurrent"`
			MaxAgents     *int `yaml:"maxAgents"`
			MaxTurns      *int `yaml:"maxTurns"`
		} `yaml:"limits"`
	}
	if unmarshalYAML(data, &zeros) == nil {
		z := zeros.Limits
		if z.MaxDepth != nil && *z.MaxDepth == 0 {
			fc.Limits.MaxDepth = cadre.NoSubagents
		}
		for _, v := range []struct {
			key  string
			n    *int
			want string
		}{{"maxConcurrent", z.MaxConcurrent, "at least 1 agent working at once"}, {"maxAgents", z.MaxAgents, "at least 1, the root alone"},
			{"maxTurns", z.MaxTurns, "at least 1 model call per agent"}} {
			if v.n != nil && *v.n == 0 {
				line, col := findKey(data, v.key)
				return &ConfigError{File: file, Line: line, Column: col, Msg: fmt.Sprintf("%s: 0 is not valid: a run needs %s; leave the key out for the default", v.key, v.want)}
			}
		}
	}
	if l.BudgetTokens < -1 {
		return bad("budgetTokens", fmt.Sprint(l.BudgetTokens), "a number of tokens, 0 for the default, or -1 for no budget")
	}
	if fc.LeaseTTL != "" {
		if d, err := time.ParseDuration(fc.LeaseTTL); err != nil || d < 100*time.Millisecond {
			return bad("leaseTTL", fc.LeaseTTL, `a duration of 100ms or more, such as "10s"`)
		}
	}
	for name, p := range fc.Providers {
		if !oneOf(name, "openai", "ollama", "anthropic", "scripted") {
			line, col := findKey(data, name)
			return &ConfigError{File: file, Line: line, Column: col, Msg: fmt.Sprintf("providers.%s: unknown provider; use openai, ollama or anthropic", name)}
		}
		if p.MaxAttempts < 0 {
			return bad("maxAttempts", fmt.Sprint(p.MaxAttempts), "a number of tries of 1 or more (0 for the default)")
		}
		if p.StallTimeout != "" && p.StallTimeout != "0" {
			if d, err := time.ParseDuration(p.StallTimeout); err != nil || d < 0 {
				return bad("stallTimeout", p.StallTimeout, `a duration such as "2m" or "90s", or "0" for none`)
			}
		}
		if err := checkInput(file, data, "providers."+name, p.Input); err != nil {
			return err
		}
	}
	for name, m := range fc.Models {
		if m.Model == "" {
			line, col := findKey(data, name)
			return &ConfigError{File: file, Line: line, Column: col, Msg: fmt.Sprintf("models.%s: model is missing; give it as provider:model, for example openai:gpt-4o-mini", name)}
		}
		if err := checkInput(file, data, "models."+name, m.Input); err != nil {
			return err
		}
	}
	for _, rule := range fc.WebFetch.Allow {
		if _, err := builtin.ParseFetchRule(rule); err != nil {
			line, col := findListItem(data, "allow", rule)
			return &ConfigError{File: file, Line: line, Column: col, Msg: "webFetch.allow: " + err.Error() +
				"; give a host (intranet.example.com), a host and port (127.0.0.1:8080), *.domain, or a network (10.0.0.0/8)"}
		}
	}
	if ws := fc.WebSearch; ws != (webSearchConfig{}) {
		b := builtin.SearchBackend{Provider: ws.Provider, URL: ws.URL, APIKey: "set"}
		if err := b.Check(); err != nil {
			line, col := findKey(data, "webSearch")
			return &ConfigError{File: file, Line: line, Column: col, Msg: "webSearch: " + err.Error()}
		}
	}
	if err := checkSandbox(file, data, &fc.Sandbox); err != nil {
		return err
	}
	if err := checkTelemetry(file, data, fc); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(fc.MCPServers)) {
		e := fc.MCPServers[name]
		if err := checkMCPServer(file, data, name, e); err != nil {
			return err
		}
		e.file = file
		fc.MCPServers[name] = e
	}
	return nil
}

// envPattern is an entry of envPassthrough: a variable's name, a prefix
// and *, or * alone.
var envPattern = regexp.MustCompile(`^(\*|[A-Za-z_][A-Za-z0-9_]*\*?)$`)

// mcpServerName is what a server's name may be: it is the middle of the
// names mcp__NAME__TOOL of its tools.
var mcpServerName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// checkMCPServer checks one entry of mcpServers read from file.
func checkMCPServer(file string, data []byte, name string, e mcpServerConfig) *ConfigError {
	bad := func(key, msg string) *ConfigError {
		line, col := findMCPKey(data, name, key)
		return &ConfigError{File: file, Line: line, Column: col, Msg: "mcpServers." + name + ": " + msg}
	}
	switch {
	case !mcpServerName.MatchString(name) || strings.Contains(name, "__"):
		return bad("", "a server name may have letters, digits, - and _ (but not __), since its tools are named mcp__NAME__TOOL; rename it")
	case e.Type == "sse":
		return bad("type", "type sse (the HTTP+SSE transport of older servers) is not supported; give the server's streamable HTTP endpoint as url, with type http")
	case e.Type != "" && e.Type != "stdio" && e.Type != "http":
		return bad("type", fmt.Sprintf("type %q is not known; use stdio (with command) or http (with url)", e.Type))
	case e.Command != "" && e.URL != "":
		return bad("url", "give either command (a program cadre starts) or url (a server reached over HTTP), not both")
	case e.Command == "" && e.URL == "":
		return bad("", "command or url is missing; give command (a program speaking MCP on stdin and stdout) or url (a streamable HTTP endpoint)")
	case e.Type == "stdio" && e.URL != "":
		return bad("type", "type stdio needs a command, not a url; use type http for a url")
	case e.Type == "http" && e.Command != "":
		return bad("type", "type http needs a url, not a command; use type stdio for a command")
	case e.URL != "" && (len(e.Args) > 0 || len(e.Env) > 0 || e.Cwd != ""):
		return bad("url", "args, env and cwd are for servers cadre starts with a command; this one has a url")
	case e.Command != "" && len(e.Headers) > 0:
		return bad("headers", "headers are for servers reached by url; this one has a command (give it env instead)")
	case e.URL != "" && len(e.EnvPassthrough) > 0:
		return bad("envPassthrough", "envPassthrough is for servers cadre starts with a command; this one has a url")
	}
	for _, v := range e.EnvPassthrough {
		if !envPattern.MatchString(v) {
			return bad("envPassthrough", fmt.Sprintf("%q is not a variable name; give names such as AWS_PROFILE, a prefix such as AWS_*, or * for the whole environment", v))
		}
	}
	if e.URL != "" && !strings.Contains(e.URL, "${") {
		if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url", fmt.Sprintf("url %q is not an http:// or https:// address", e.URL))
		}
	}
	return nil
}

// findMCPKey locates key in the entry of server name under mcpServers, or
// the entry itself when key is empty or not found, in YAML or JSON.
func findMCPKey(data []byte, name, key string) (int, int) {
	lines := strings.Split(string(data), "\n")
	at := func(i int, k string) (int, bool) {
		t := strings.TrimLeft(lines[i], " \t{,")
		if strings.HasPrefix(t, k+":") || strings.HasPrefix(t, `"`+k+`"`) {
			return len(lines[i]) - len(t) + 1, true
		}
		return 0, false
	}
	start := 0
	for i := range lines {
		if strings.Contains(lines[i], "mcpServers") {
			start = i
			break
		}
	}
	for i := start; i < len(lines); i++ {
		col, ok := at(i, name)
		if !ok {
			continue
		}
		if key != "" {
			for j := i; j < len(lines); j++ {
				if c, ok := at(j, key); ok {
					return j + 1, c
				}
				if j > i && strings.Contains(lines[j], "}") && !strings.Contains(lines[j], "{") {
					break
				}
			}
		}
		return i + 1, col
	}
	return 0, 0
}

// loadMCPJSON reads the mcpServers of the project's .mcp.json, the file
// Claude Code uses, under what the config files set. Entries cadre
// cannot use are kept with their problem, which is reported when the
// servers are connected, so the file does not stop commands that do not
// need them.
func (a *app) loadMCPJSON(p *projectFiles) error {
	file := filepath.Join(p.dir, ".mcp.json")
	data, err := safefile.ReadRegular(file, maxConfigFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read MCP servers: %w", fileError(file, err))
	}
	data = oneNewline(data)
	var doc struct {
		MCPServers map[string]mcpServerConfig `yaml:"mcpServers"`
	}
	// JSON is YAML, and the YAML decoder tells where an error is.
	if err := unmarshalYAML(data, &doc); err != nil {
		ce := &ConfigError{File: file, Msg: err.Error()}
		var ye yaml.Error
		if !yamlErrorAt(ce, err) && errors.As(err, &ye) {
			ce.Msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				ce.Line, ce.Column = tk.Position.Line, tk.Position.Column
			}
		}
		return ce
	}
	for name, e := range doc.MCPServers {
		e.file = file
		if ce := checkMCPServer(file, data, name, e); ce != nil {
			e.problem = ce.Error()
		}
		if p.mcp == nil {
			p.mcp = map[string]mcpServerConfig{}
		}
		p.mcp[name] = e
	}
	p.mcpPath = file
	return nil
}

// findListItem locates value in the list under key, written as an item
// (- value) or inside [a, b], for error messages; or the key when the
// value is not found.
func findListItem(data []byte, key, value string) (int, int) {
	line, col := findKey(data, key)
	if line == 0 {
		line = 1 // a flow mapping, such as {allow: [a, b]}: look everywhere
	}
	lines := strings.Split(string(data), "\n")
	for i := line - 1; i < len(lines); i++ {
		if col > 0 && i > line-1 && !strings.HasPrefix(strings.TrimLeft(lines[i], " \t"), "-") {
			break
		}
		if c := strings.Index(lines[i], value); c >= 0 && value != "" {
			if q := c - 1; q >= 0 && (lines[i][q] == '"' || lines[i][q] == '\'') {
				c = q
			}
			return i + 1, c + 1
		}
	}
	if col == 0 {
		return 0, 0
	}
	return line, col
}

// findKey locates the first line that sets key, for error messages.
func findKey(data []byte, key string) (int, int) {
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimLeft(line, " \t")
		if strings.HasPrefix(t, key+":") {
			return i + 1, len(line) - len(t) + 1
		}
	}
	return 0, 0
}

func oneOf(s string, options ...string) bool {
	for _, o := range options {
		if s == o {
			return true
		}
	}
	return false
}

func (c *config) merge(f fileConfig) {
	if f.Model != "" {
		c.Model = f.Model
	}
	// A later file's entry of a model or a provider changes the fields it
	// sets and keeps the others: a project that sets a provider's
	// toolCalling keeps the user's baseURL and key (and an untrusted one,
	// whose baseURL was withheld, cannot drop them).
	for k, v := range f.Models {
		if c.Models == nil {
			c.Models = map[string]namedModel{}
		}
		c.Models[k] = c.Models[k].with(v)
	}
	for k, v := range f.Providers {
		if c.Providers == nil {
			c.Providers = map[string]providerConfig{}
		}
		c.Providers[k] = c.Providers[k].with(v)
	}
	for k, v := range f.MCPServers {
		if c.MCPServers == nil {
			c.MCPServers = map[string]mcpServerConfig{}
		}
		c.MCPServers[k] = v
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Approve, f.Approve)
	set(&c.Protocol, f.Protocol)
	set(&c.Report, f.Report)
	set(&c.Store, f.Store)
	set(&c.LeaseTTL, f.LeaseTTL)
	set(&c.Workspace, f.Workspace)
	set(&c.Agent, f.Agent)
	set(&c.Engine, f.Engine)
	c.Temporal.merge(f.Temporal)
	if f.Strict != nil {
		c.Strict = f.Strict
	}
	if f.Say != nil {
		c.Say = f.Say
	}
	if f.FileTools.AllowHardLinks != nil {
		c.FileTools.AllowHardLinks = f.FileTools.AllowHardLinks
	}
	c.AgentsDirs = append(c.AgentsDirs, f.AgentsDirs...)
	c.Plugins = append(c.Plugins, f.Plugins...)
	c.WebFetch.Allow = append(c.WebFetch.Allow, f.WebFetch.Allow...)
	if f.WebSearch != (webSearchConfig{}) {
		c.WebSearch = f.WebSearch
	}
	c.Sandbox.merge(f.Sandbox)
	c.mergeTelemetry(f)
	setN := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setN(&c.Limits.MaxDepth, f.Limits.MaxDepth)
	setN(&c.Limits.MaxConcurrent, f.Limits.MaxConcurrent)
	setN(&c.Limits.MaxAgents, f.Limits.MaxAgents)
	setN(&c.Limits.MaxTurns, f.Limits.MaxTurns)
	if f.Limits.TimeoutSeconds != 0 {
		c.Limits.TimeoutSeconds, c.Limits.Timeout = f.Limits.TimeoutSeconds, 0
	}
	if f.Limits.Timeout != 0 {
		c.Limits.TimeoutSeconds, c.Limits.Timeout = 0, f.Limits.Timeout
	}
	setN(&c.Limits.MaxQuestions, f.Limits.MaxQuestions)
	if f.Limits.BudgetTokens != 0 {
		c.Limits.BudgetTokens = f.Limits.BudgetTokens
	}
}

// timeout is the run's time limit.
func (l limitsConfig) timeout() time.Duration {
	if l.Timeout != 0 {
		return l.Timeout
	}
	return time.Duration(l.TimeoutSeconds) * time.Second
}

// limits converts the configured limits.
func (c *config) limits() cadre.Limits {
	return cadre.Limits{
		MaxDepth: c.Limits.MaxDepth, MaxConcurrent: c.Limits.MaxConcurrent, MaxAgents: c.Limits.MaxAgents,
		BudgetTokens: c.Limits.BudgetTokens, MaxTurns: c.Limits.MaxTurns,
		Timeout:      c.Limits.timeout(),
		MaxQuestions: c.Limits.MaxQuestions,
	}
}

// home is the user's home directory ("" when unknown).
func (a *app) home() string {
	if h := a.io.Getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// projectDir is the nearest directory from the working directory up that
// has a .cadre folder, else the repository root, else the working directory.
// The .cadre folder of a parent folder is left out, with a warning, when
// another user owns it or its folder is writable by all (as /tmp is):
// anyone could have put it there.
func (a *app) projectDir() string {
	wd, err := a.wd()
	if err != nil {
		return ""
	}
	for d := wd; ; {
		if fi, err := os.Stat(filepath.Join(d, ".cadre")); err == nil && fi.IsDir() && d != a.home() {
			if d == wd {
				return d
			}
			why := ""
			if pi, err := os.Stat(d); err == nil && pi.Mode().Perm()&0o002 != 0 {
				why = d + " is writable by every user"
			} else if ownedByOther(fi) {
				why = "another user owns it"
			}
			if why == "" {
				return d
			}
			a.skipParent(filepath.Join(d, ".cadre"), why)
		} else if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			// A folder whose .cadre was skipped is not the project
			// either, whatever else it holds.
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return wd
		}
		d = up
	}
}

// skipParent says, once, that the .cadre folder dir of a parent folder
// is not used, and why.
func (a *app) skipParent(dir, why string) {
	a.skippedMu.Lock()
	defer a.skippedMu.Unlock()
	if a.skippedParents[dir] {
		return
	}
	if a.skippedParents == nil {
		a.skippedParents = map[string]bool{}
	}
	a.skippedParents[dir] = true
	fmt.Fprintf(a.errOut(), "cadre: warning: not using %s as the project's settings: %s, so anyone could have put it there. "+
		"Run cadre from a folder of your own, or make one with a .cadre or .git folder in it\n", dir, why)
}

// searchBackend is the service of web_search, its key read from the
// environment. Without a webSearch section, calls say how to add one.
func (c *config) searchBackend(getenv func(string) string) (builtin.SearchBackend, error) {
	ws := c.WebSearch
	if ws.Provider == "" {
		return builtin.SearchBackend{NotConfigured: "web search is not configured for this run, so web_search cannot be used: go on without it. " +
			"(The user can set it up with webSearch: {provider: searxng, url: http://localhost:8888} or {provider: brave} and BRAVE_API_KEY in .cadre/config.yaml.)"}, nil
	}
	b := builtin.SearchBackend{Provider: ws.Provider, URL: ws.URL}
	if ws.Provider == builtin.SearchBrave {
		env := ws.APIKeyEnv
		if env == "" {
			env = "BRAVE_API_KEY"
		}
		if b.APIKey = getenv(env); b.APIKey == "" {
			return b, fmt.Errorf("webSearch: provider brave reads its API key from %s, which is not set: set it, or name another variable with apiKeyEnv", env)
		}
	}
	return b, b.Check()
}

// fetchRules parses the webFetch.allow rules, checked when the files were
// read.
func (c *config) fetchRules() ([]builtin.FetchRule, error) {
	var out []builtin.FetchRule
	for _, s := range c.WebFetch.Allow {
		r, err := builtin.ParseFetchRule(s)
		if err != nil {
			return nil, fmt.Errorf("webFetch.allow: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}
