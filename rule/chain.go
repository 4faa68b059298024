package rule

import (
	"fmt"
	"strings"

	"github.com/cadre-ai/cadre"
)

// Command judges a command line that tool (run_command) would run.
func (c Chain) Command(tool, line string) Verdict {
	v := c.each(func(s *Set) verdict { return s.judgeCommand(tool, line) })
	return finish(tool, fmt.Sprintf("the command `%s`", clip(line, 200)), v)
}

// URL judges a URL that tool (web_fetch) would fetch.
func (c Chain) URL(tool, raw string) Verdict {
	v := c.each(func(s *Set) verdict { return s.judgeURL(tool, raw) })
	return finish(tool, "the URL "+clip(raw, 200), v)
}

// Agent judges starting an agent of the named definition; name "" is a
// subagent without a definition.
func (c Chain) Agent(name string) Verdict {
	v := c.each(func(s *Set) verdict { return s.judgeAgent(name) })
	what := "starting the agent " + name
	if name == "" {
		what = "starting a subagent without a definition"
	}
	return finish(cadre.RuleAgents, what, v)
}

// Call judges a call of a tool whose arguments rules do not look at.
func (c Chain) Call(tool string) Verdict {
	v := c.each(func(s *Set) verdict { return s.judgeAll(tool) })
	return finish(tool, "calling "+tool, v)
}

// AllowsAgent reports whether starting an agent of the named definition is
// not denied (it may need approval).
func (c Chain) AllowsAgent(name string) bool {
	return c.Agent(name).Action != cadre.PermissionDeny
}

// each runs judge over the sets and returns the strictest verdict, the
// first set's on a tie.
func (c Chain) each(judge func(*Set) verdict) verdict {
	out := verdict{action: cadre.PermissionAllow}
	for _, s := range c {
		out = worse(out, judge(s))
		if out.action == cadre.PermissionDeny {
			break
		}
	}
	return out
}

// finish turns a verdict into words.
func finish(tool, what string, v verdict) Verdict {
	if v.part != "" && v.action != cadre.PermissionAllow {
		what += fmt.Sprintf(" (its part `%s`)", clip(v.part, 120))
	}
	switch v.action {
	case cadre.PermissionAllow:
		return Verdict{Action: cadre.PermissionAllow}
	case cadre.PermissionAsk:
		return Verdict{Action: cadre.PermissionAsk, Reason: fmt.Sprintf("%s needs approval: the rule %s of agent %s asks for it", what, describe(v.rule.ToolRule), v.set.name)}
	}
	var b strings.Builder
	who := "the rules of agent " + v.set.name
	switch {
	case v.unsure != "":
		fmt.Fprintf(&b, "%s was not allowed: it %s.", capital(what), v.unsure)
		if a := allowedText(tool, v.set.allowed(tool)); a != "" {
			fmt.Fprintf(&b, " %s %s.", capital(who), a)
		}
	case v.rule == nil:
		fmt.Fprintf(&b, "%s was not allowed by %s.", capital(what), who)
	case v.rule.p == nil:
		if a := allowedText(tool, v.set.allowed(tool)); a != "" {
			fmt.Fprintf(&b, "%s is outside what %s allow (%s): %s %s.", capital(what), who, describe(v.rule.ToolRule), who, a)
		} else {
			fmt.Fprintf(&b, "%s is denied: %s deny it (%s).", capital(what), who, describe(v.rule.ToolRule))
		}
	default:
		fmt.Fprintf(&b, "%s is denied by the rule %s of agent %s.", capital(what), describe(v.rule.ToolRule), v.set.name)
	}
	if v.note != "" {
		fmt.Fprintf(&b, " (It %s.)", v.note)
	}
	switch tool {
	case cadre.RuleAgents:
		b.WriteString(" Do not try to start it again; start an agent the rules allow, or do the work yourself.")
	default:
		b.WriteString(" Do not try it again as it is: do only what the rules allow, or go on without it and say so in your answer.")
	}
	return Verdict{Action: cadre.PermissionDeny, Reason: b.String()}
}

// allowedText says what the allow rules of a set let through, or "".
func allowedText(tool string, patterns []string) string {
	if len(patterns) == 0 {
		return ""
	}
	list := "`" + strings.Join(patterns, "`, `") + "`"
	switch subjectOf(tool) {
	case subjectCommand:
		return "allow only commands matching " + list + ", and check each simple command of a line (between ;, &&, ||, |, & and newlines) on its own"
	case subjectPath:
		return "allow only paths (relative to the workspace root) matching " + list
	case subjectURL:
		return "allow only URLs matching " + list
	case subjectAgent:
		return "allow only the agents " + list
	}
	return "allow only " + list
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
