package model

import (
	"fmt"
	"strings"
)

// KnownProviders returns the provider prefixes cadre understands, in the
// order they are listed in messages.
func KnownProviders() []string {
	return []string{"openai", "ollama", "anthropic", "scripted"}
}

// A NameError reports a model name that cannot be used.
type NameError struct {
	Name string // the name as given
	Msg  string // what is wrong and what to write instead
}

func (e *NameError) Error() string { return e.Msg }

// ParseName splits a "provider:model" name at its first colon, so that
// "ollama:llama3.2:3b" is provider "ollama", model "llama3.2:3b". The
// provider must be one of [KnownProviders]; for scripted the model part is
// the path of a script file.
func ParseName(name string) (provider, model string, err error) {
	s := strings.TrimSpace(name)
	known := strings.Join(KnownProviders(), ", ")
	if s == "" {
		return "", "", &NameError{Name: name, Msg: "model name is empty: write it as provider:model, for example openai:gpt-4o (known providers: " + known + ")"}
	}
	provider, model, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", &NameError{Name: name, Msg: fmt.Sprintf("model %q has no provider prefix: write it as provider:model, for example %s:%s (known providers: %s)", s, guessProvider(s), s, known)}
	}
	provider = strings.TrimSpace(provider)
	model = strings.TrimSpace(model)
	if !isKnown(provider) {
		return "", "", &NameError{Name: name, Msg: fmt.Sprintf("model %q names unknown provider %q: use one of %s", s, provider, known)}
	}
	if model == "" {
		return "", "", &NameError{Name: name, Msg: fmt.Sprintf("model %q has nothing after %q: write the model name after the colon, for example %s", s, provider+":", example(provider))}
	}
	return provider, model, nil
}

func isKnown(p string) bool {
	for _, k := range KnownProviders() {
		if p == k {
			return true
		}
	}
	return false
}

// guessProvider picks the likeliest prefix for a bare model name, for the
// example in an error message.
func guessProvider(m string) string {
	l := strings.ToLower(m)
	switch {
	case strings.HasPrefix(l, "claude"):
		return "anthropic"
	case strings.HasPrefix(l, "gpt"), strings.HasPrefix(l, "o1"), strings.HasPrefix(l, "o3"), strings.HasPrefix(l, "o4"):
		return "openai"
	case strings.HasSuffix(l, ".yaml"), strings.HasSuffix(l, ".yml"), strings.HasSuffix(l, ".json"):
		return "scripted"
	}
	return "ollama"
}

func example(p string) string {
	switch p {
	case "anthropic":
		return "anthropic:claude-sonnet-4-5"
	case "ollama":
		return "ollama:llama3.2"
	case "scripted":
		return "scripted:testdata/demo.yaml"
	}
	return "openai:gpt-4o"
}
