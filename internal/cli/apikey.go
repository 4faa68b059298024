package cli

import (
	"fmt"

	"github.com/cadre-ai/cadre/model"
)

// missingKey returns the environment variable that must hold the API key
// of the named model when it is not set, or "" when the model has its key
// or needs none: a local server (ollama:, or a baseURL of one's own) and
// scripted models need none unless the config names a key variable.
func (m *models) missingKey(name string) string {
	full, err := m.resolve(name)
	if err != nil {
		return ""
	}
	prov, _, _ := model.ParseName(full)
	pc := m.cfg.Providers[prov]
	key, base := pc.APIKeyEnv, pc.BaseURL
	switch prov {
	case "openai":
		if key == "" {
			key = "OPENAI_API_KEY"
		}
		if base == "" {
			base = m.getenv("OPENAI_BASE_URL")
		}
	case "anthropic":
		if key == "" {
			key = "ANTHROPIC_API_KEY"
		}
		if base == "" {
			base = m.getenv("ANTHROPIC_BASE_URL")
		}
	default:
		if key == "" {
			return ""
		}
	}
	if m.getenv(key) != "" || base != "" && pc.APIKeyEnv == "" {
		return ""
	}
	return key
}

// errMissingKey says which variable to set for a model's API key.
func errMissingKey(name, env string) error {
	return fmt.Errorf("model %s needs an API key and %s is not set: export %s=… (or set apiKeyEnv for the provider in .cadre/config.yaml)", name, env, env)
}
