package builtin

import (
	"regexp"
	"slices"
	"strings"
)

// secretWords are words of a variable's name (split at _) that mark it as
// holding a secret: GITHUB_TOKEN, DB_PASSWORD, OPENAI_API_KEY.
var secretWords = []string{
	"KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS",
	"PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "AUTH", "COOKIE",
}

// secretNames are variables that hold secrets, or lead to them, without a
// telling word in their name.
var secretNames = []string{
	"PGPASSWORD", "MYSQL_PWD", "SSH_AGENT_PID", "GPG_AGENT_INFO", "XAUTHORITY",
	"DBUS_SESSION_BUS_ADDRESS", "KRB5CCNAME",
}

// secretPrefixes start the names of variables that are all dropped.
var secretPrefixes = []string{"AWS_", "AZURE_"}

// urlWithPassword matches a URL that carries a password, such as
// postgres://user:pass@host/db.
var urlWithPassword = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@`)

// CleanEnv returns env without the variables that hold secrets, so that a
// command cannot read cadre's provider keys or the user's credentials from
// its environment. A variable is dropped when
//
//   - its name is in secret (the variables cadre's configuration names for
//     keys), or is one of PGPASSWORD, MYSQL_PWD, SSH_AGENT_PID,
//     GPG_AGENT_INFO, XAUTHORITY, DBUS_SESSION_BUS_ADDRESS, KRB5CCNAME;
//   - a word of its name, split at underscores and compared without case,
//     is KEY, KEYS, APIKEY, TOKEN, TOKENS, SECRET, SECRETS, PASSWORD, PASSWD,
//     PASSPHRASE, CREDENTIAL, CREDENTIALS, AUTH or COOKIE (OPENAI_API_KEY,
//     GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, SSH_AUTH_SOCK,
//     GOOGLE_APPLICATION_CREDENTIALS);
//   - its name starts with AWS_ or AZURE_;
//   - its value holds a URL with a password (scheme://user:password@…).
//
// A name in pass is kept whatever the rules say. Everything else — PATH,
// HOME, USER, LANG, LC_*, TERM, TZ, SHELL, GOPATH, … — is kept, in order.
func CleanEnv(env, secret, pass []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if slices.Contains(pass, name) || !isSecretVar(name, value, secret) {
			out = append(out, kv)
		}
	}
	return out
}

func isSecretVar(name, value string, secret []string) bool {
	if slices.Contains(secret, name) {
		return true
	}
	upper := strings.ToUpper(name)
	if slices.Contains(secretNames, upper) {
		return true
	}
	for _, p := range secretPrefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	for _, w := range strings.Split(upper, "_") {
		if slices.Contains(secretWords, w) {
			return true
		}
	}
	return urlWithPassword.MatchString(value)
}
