package builtin

import (
	"regexp"
	"slices"
	"strings"
)

// secretWords are words of a variable's name (split at _ and where case
// changes) that mark it as holding a secret: GITHUB_TOKEN, DB_PASSWORD,
// OPENAI_API_KEY, openaiApiKey, GITHUB_PAT, SENTRY_DSN.
var secretWords = []string{
	"KEY", "KEYS", "APIKEY", "TOKEN", "TOKENS", "SECRET", "SECRETS",
	"PASSWORD", "PASSWD", "PASSPHRASE", "PASS", "PWD", "CREDENTIAL", "CREDENTIALS", "AUTH", "COOKIE",
	"PAT", "JWT", "DSN", "WEBHOOK", "WEBHOOKS",
}

// keptNames are variables kept although a word of their name is in
// secretWords: PWD is the working directory.
var keptNames = []string{"PWD"}

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

// passwordSetting matches a password given as a setting in a value, as in
// a connection string: "host=db password=x", "Server=db;Pwd=x".
var passwordSetting = regexp.MustCompile(`(?i)(password|passwd|pwd)\s*=`)

// CleanEnv returns env without the variables that hold secrets, so that a
// command cannot read cadre's provider keys or the user's credentials from
// its environment. A variable is dropped when
//
//   - its name is in secret (the variables cadre's configuration names for
//     keys), or is one of PGPASSWORD, MYSQL_PWD, SSH_AGENT_PID,
//     GPG_AGENT_INFO, XAUTHORITY, DBUS_SESSION_BUS_ADDRESS, KRB5CCNAME;
//   - a word of its name, split at underscores and where lower case turns
//     to upper (openaiApiKey is openai, Api, Key) and compared without
//     case, is KEY, KEYS, APIKEY, TOKEN, TOKENS, SECRET, SECRETS,
//     PASSWORD, PASSWD, PASSPHRASE, PASS, PWD, CREDENTIAL, CREDENTIALS,
//     AUTH, COOKIE, PAT, JWT, DSN, WEBHOOK or WEBHOOKS (OPENAI_API_KEY,
//     GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, SSH_AUTH_SOCK,
//     GOOGLE_APPLICATION_CREDENTIALS, DB_PASS, SMTP_PWD, GITHUB_PAT,
//     CI_JOB_JWT, SENTRY_DSN, SLACK_WEBHOOK_URL), PWD itself aside;
//   - its name starts with AWS_ or AZURE_;
//   - its value holds a URL with a password (scheme://user:password@…),
//     or a password setting (password=, passwd=, pwd=, in any case).
//
// A name in pass is kept whatever the rules say. Everything else — PATH,
// HOME, USER, LANG, LC_*, TERM, TZ, SHELL, GOPATH, PWD, … — is kept, in
// order.
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
	if !slices.Contains(keptNames, name) {
		for _, w := range nameWords(name) {
			if slices.Contains(secretWords, strings.ToUpper(w)) {
				return true
			}
		}
	}
	return urlWithPassword.MatchString(value) || passwordSetting.MatchString(value)
}

// nameWords splits a variable's name into words: at underscores, and
// where a lower-case letter or digit is followed by an upper-case one
// (apiKey) or an upper-case run ends before a lower-case letter (APIKey).
func nameWords(name string) []string {
	var out []string
	for _, part := range strings.Split(name, "_") {
		start := 0
		for i := 1; i < len(part); i++ {
			prev, cur := part[i-1], part[i]
			lowerToUpper := (isLower(prev) || isDigit(prev)) && isUpper(cur)
			runEnds := isUpper(prev) && isUpper(cur) && i+1 < len(part) && isLower(part[i+1])
			if lowerToUpper || runEnds {
				out = append(out, part[start:i])
				start = i
			}
		}
		if start < len(part) {
			out = append(out, part[start:])
		}
	}
	return out
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
