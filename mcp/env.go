package mcp

import (
	"maps"
	"runtime"
	"slices"
	"strings"
)

// DefaultEnv returns the names of the variables every stdio server gets
// from cadre's environment, as the official MCP SDKs give them: on Unix
// HOME, LOGNAME, PATH, SHELL, TERM, USER, and the locale and temporary
// folder (LANG, LC_*, TMPDIR); on Windows the variables programs need to
// find their folders and the system. A name ending in * stands for every
// variable starting with what comes before it.
func DefaultEnv() []string {
	if runtime.GOOS == "windows" {
		return []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
			"PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR"}
	}
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_*", "TMPDIR"}
}

// serverEnv is the environment of the stdio server of sc: the variables
// of environ named by DefaultEnv (except exported shell functions, whose
// values start with "()") and by sc.EnvPassthrough, then sc.Env.
func serverEnv(environ []string, sc ServerConfig) []string {
	defaults := DefaultEnv()
	out := make([]string, 0, len(defaults)+len(sc.Env))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, set := sc.Env[envKey(k, sc.Env)]; set {
			continue
		}
		if envMatch(sc.EnvPassthrough, k) || envMatch(defaults, k) && !strings.HasPrefix(v, "()") {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sc.Env)) {
		out = append(out, k+"="+sc.Env[k])
	}
	return out
}

// envMatch reports whether one of patterns names the variable k: the
// same name, or a prefix followed by *. Names are compared without regard
// to case on Windows, as Windows does.
func envMatch(patterns []string, k string) bool {
	for _, p := range patterns {
		prefix, wild := strings.CutSuffix(p, "*")
		switch {
		case wild && len(k) >= len(prefix) && sameName(k[:len(prefix)], prefix):
			return true
		case !wild && sameName(k, p):
			return true
		}
	}
	return false
}

// envKey returns the key of env that names the variable k, or k.
func envKey(k string, env map[string]string) string {
	if runtime.GOOS != "windows" {
		return k
	}
	for e := range env {
		if strings.EqualFold(e, k) {
			return e
		}
	}
	return k
}

func sameName(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}
