package cli

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/model/anthropic"
	"github.com/cadre-ai/cadre/model/openai"
	"github.com/cadre-ai/cadre/model/scripted"
	"github.com/cadre-ai/cadre/redact"
)

// models resolves model names for the engine: named models from the
// config, aliases used by agent files, and provider:model names.
type models struct {
	cfg    *config
	getenv func(string) string
	client *http.Client
	logger *slog.Logger
	// redact, when set, hides secrets in what the models return.
	redact *redact.Redactor

	// scripted allows scripted models (a file whose replies are tool
	// calls of its writer's choosing): set when the run's own model is one
	// or the project is trusted (see app.scriptedAllowed), so that an
	// agent file an untrusted repository brings cannot name one.
	scripted bool

	mu    sync.Mutex
	cache map[string]cadre.Model
}

func newModels(cfg *config, getenv func(string) string) *models {
	return &models{cfg: cfg, getenv: getenv, cache: map[string]cadre.Model{}}
}

// resolve turns a name into provider:model, following named models.
func (m *models) resolve(name string) (string, error) {
	seen := map[string]bool{}
	for {
		nm, ok := m.cfg.Models[name]
		if !ok {
			break
		}
		if seen[name] {
			return "", fmt.Errorf("named model %q refers to itself through models: in the config", name)
		}
		seen[name] = true
		name = nm.Model
	}
	prov, id, err := model.ParseName(name)
	if err != nil {
		return "", err
	}
	// As ParseName reads it (spaces around the parts trimmed), so that
	// what a caller checks of the name is what is opened.
	return prov + ":" + id, nil
}

// ToolCalling reports whether a model calls tools, as the config says
// (local.ToolCaller).
func (m *models) ToolCalling(name string) bool {
	for {
		nm, ok := m.cfg.Models[name]
		if !ok {
			break
		}
		if nm.ToolCalling != nil {
			return *nm.ToolCalling
		}
		name = nm.Model
	}
	prov, _, err := model.ParseName(name)
	if err != nil {
		return true
	}
	if p, ok := m.cfg.Providers[prov]; ok && p.ToolCalling != nil {
		return *p.ToolCalling
	}
	return true
}

// input is what the config says a model takes besides text, through
// named models and then its provider's entry; nil when it says nothing,
// which leaves it to the provider's default.
func (m *models) input(name string) []cadre.MediaKind {
	for {
		nm, ok := m.cfg.Models[name]
		if !ok {
			break
		}
		if nm.Input != nil {
			return inputKinds(nm.Input)
		}
		name = nm.Model
	}
	prov, _, err := model.ParseName(name)
	if err != nil {
		return nil
	}
	if p, ok := m.cfg.Providers[prov]; ok && p.Input != nil {
		return inputKinds(p.Input)
	}
	return nil
}

// inputKinds turns an input list of the config into the media kinds it
// names: never nil, so that [text] means text only.
func inputKinds(input []string) []cadre.MediaKind {
	kinds := []cadre.MediaKind{}
	for _, v := range input {
		if k := cadre.MediaKind(v); (k == cadre.MediaImage || k == cadre.MediaAudio) && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// Choose implements local.ModelSource: frontmatter model (through named
// models; inherit or an unconfigured alias means the parent's), then the
// model role, then the parent's model.
func (m *models) Choose(def *cadre.Definition, parent string) (string, string) {
	if def == nil {
		return parent, ""
	}
	if want := strings.TrimSpace(def.Model); want != "" && want != "inherit" {
		name := ""
		if _, ok := m.cfg.Models[want]; ok {
			name = want
		} else if _, err := m.resolve(want); err == nil && strings.Contains(want, ":") {
			name = want
		} else if prov, rest, ok := strings.Cut(want, "/"); ok && knownProvider(prov) {
			name = prov + ":" + rest
		}
		if name != "" {
			if full, err := m.resolve(name); err == nil && providerOf(full) == "scripted" && !m.scripted {
				return parent, fmt.Sprintf("agent %s asks for the scripted model %q, a file of replies that would decide its tool calls; cadre plays one only when the run's own model is scripted or the project is trusted: it uses its parent's model %s.", def.Name, want, parent)
			}
			return name, ""
		}
		return parent, fmt.Sprintf("agent %s asks for model %q, which is not configured: it uses its parent's model %s. Add %q under models: in .cadre/config.yaml to choose one.", def.Name, want, parent, want)
	}
	if role := strings.ToLower(def.ModelRole); role != "" {
		for name := range m.cfg.Models {
			if strings.ToLower(name) == role {
				return name, ""
			}
		}
	}
	return parent, ""
}

func knownProvider(p string) bool {
	switch p {
	case "openai", "ollama", "anthropic", "scripted":
		return true
	}
	return false
}

// Open implements local.ModelSource.
func (m *models) Open(name string) (cadre.Model, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.cache[name]; ok {
		return c, nil
	}
	full, err := m.resolve(name)
	if err != nil {
		return nil, err
	}
	prov, id, _ := model.ParseName(full)
	pc := m.cfg.Providers[prov]
	env := func(key, def string) string {
		if v := m.getenv(key); v != "" {
			return v
		}
		return def
	}
	keyVar := func(def string) string {
		if pc.APIKeyEnv != "" {
			return pc.APIKeyEnv
		}
		return def
	}
	maxTokens := 0
	if nm, ok := m.cfg.Models[name]; ok {
		maxTokens = nm.MaxTokens
	}
	retry := model.RetryPolicy{MaxAttempts: pc.MaxAttempts}
	var mdl cadre.Model
	switch prov {
	case "openai", "ollama":
		base, key := pc.BaseURL, keyVar("OPENAI_API_KEY")
		if prov == "ollama" {
			key = keyVar("OLLAMA_API_KEY")
			if base == "" {
				base = ollamaBase(m.getenv("OLLAMA_HOST"))
			}
		} else if base == "" {
			base = env("OPENAI_BASE_URL", "")
		}
		mdl = openai.New(openai.Config{BaseURL: base, APIKey: m.getenv(key), KeyEnv: key, Model: id, HTTPClient: m.client,
			Provider: prov, Retry: retry, StallTimeout: pc.stall(), Logger: m.logger, Input: m.input(name)})
	case "anthropic":
		base := pc.BaseURL
		if base == "" {
			base = env("ANTHROPIC_BASE_URL", "")
		}
		key := keyVar("ANTHROPIC_API_KEY")
		mdl = anthropic.New(anthropic.Config{BaseURL: base, APIKey: m.getenv(key), KeyEnv: key, Model: id, MaxTokens: maxTokens,
			HTTPClient: m.client, Retry: retry, StallTimeout: pc.stall(), Logger: m.logger, Input: m.input(name)})
	case "scripted":
		if !m.scripted {
			return nil, fmt.Errorf("model %q is a scripted model, a file of replies that decides the agent's tool calls; cadre plays one only when the run's own model is scripted or the project is trusted (cadre trust)", full)
		}
		s, err := scripted.Load(id)
		if err != nil {
			return nil, err
		}
		mdl = s
	default:
		return nil, fmt.Errorf("unknown provider %q in model %q: use openai:, ollama:, anthropic: or scripted:", prov, full)
	}
	if m.redact != nil {
		mdl = redactModel{Model: mdl, r: m.redact}
	}
	m.cache[name] = mdl
	return mdl, nil
}

// ollamaBase turns OLLAMA_HOST (host:port or a URL) into the OpenAI-compatible base URL.
func ollamaBase(host string) string {
	if host == "" {
		return openai.DefaultOllamaBaseURL
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	host = strings.TrimRight(host, "/")
	if !strings.HasSuffix(host, "/v1") {
		host += "/v1"
	}
	return host
}
