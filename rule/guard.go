package rule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/tool"
)

// maxWalk bounds how many entries of a directory are looked at to decide
// whether a search or a listing of it reaches a path the rules deny.
const maxWalk = 20000

// Guard returns t with each call judged by chain before it runs, or t
// itself when no rule of chain is about it. Paths are judged relative to
// ws's root, by where they lead once symbolic links are resolved.
//
// The guarded tool is a tool.Gate: tool.Executor judges a call, puts it to
// the approval policy when a rule asks, and runs it. Called directly
// (Call), it refuses what a rule denies or asks about.
func Guard(t cadre.Tool, chain Chain, ws tool.Workspace) cadre.Tool {
	name := t.Spec().Name
	if !chain.About(name) {
		return t
	}
	return &guarded{inner: t, name: name, chain: chain, ws: ws}
}

type guarded struct {
	inner cadre.Tool
	name  string
	chain Chain
	ws    tool.Workspace
}

var (
	_ tool.Gate       = (*guarded)(nil)
	_ cadre.Mutator   = (*guarded)(nil)
	_ tool.Summarizer = (*guarded)(nil)
)

func (g *guarded) Spec() cadre.ToolSpec { return g.inner.Spec() }

// Mutates reports what the tool it guards reports.
func (g *guarded) Mutates() bool { return cadre.Mutates(g.inner) }

// Summary describes a call as the tool it guards does.
func (g *guarded) Summary(args json.RawMessage) string { return tool.Summarize(g.inner, args) }

// Call runs a call the rules allow. A call a rule asks about is refused:
// there is no approval policy on this path.
func (g *guarded) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return g.CallJudged(ctx, args, false)
}

// CallJudged judges the call again and runs it unless that is now denied,
// or asks for approval that was not given.
func (g *guarded) CallJudged(ctx context.Context, args json.RawMessage, approved bool) (string, error) {
	v := g.judge(args)
	switch {
	case v.Action == cadre.PermissionDeny:
		return "", errors.New(v.Reason)
	case v.Action == cadre.PermissionAsk && !approved:
		return "", fmt.Errorf("%s, and it was called without an approval policy to ask", v.Reason)
	}
	return g.inner.Call(ctx, args)
}

// Judge decides about a call.
func (g *guarded) Judge(_ context.Context, args json.RawMessage) (cadre.Permission, string) {
	v := g.judge(args)
	return v.Action, v.Reason
}

func (g *guarded) judge(raw json.RawMessage) Verdict {
	subj := subjectOf(g.name)
	if subj == subjectNone || !g.patterned() {
		return g.chain.Call(g.name)
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return g.unsure("its arguments are not a JSON object")
	}
	key := "path"
	switch subj {
	case subjectCommand:
		key = "command"
	case subjectURL:
		key = "url"
	}
	if why := ambiguousKey(raw, key); why != "" {
		return g.unsure(why)
	}
	text := func(key string) (string, bool) {
		v, ok := args[key]
		if !ok || v == nil {
			return "", true
		}
		s, isText := v.(string)
		return s, isText
	}
	switch subj {
	case subjectCommand:
		cmd, ok := text("command")
		if !ok {
			return g.unsure("its command is not text")
		}
		return g.chain.Command(g.name, cmd)
	case subjectURL:
		u, ok := text("url")
		if !ok {
			return g.unsure("its url is not text")
		}
		return g.chain.URL(g.name, u)
	}
	p, ok := text("path")
	if !ok {
		return g.unsure("its path is not text")
	}
	if p == "" {
		switch g.name {
		case toolListFiles, toolSearchFiles:
			p = "."
		default:
			return g.unsure("it gives no path")
		}
	}
	return g.judgePath(p)
}

// ambiguousKey returns why the arguments of a call do not say one value
// for key, or "". The rules read key exactly, but a tool that decodes its
// arguments with encoding/json takes a key that differs only in case
// ("Command", or with ſ for s and K for k) for the same field, and the last
// of several for its value: {"command":"git status","Command":"rm -rf x"}
// would pass a rule about git and run rm. A key given twice is refused as
// well, since decoders differ on which one counts.
func ambiguousKey(raw json.RawMessage, key string) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "its arguments are not a JSON object"
	}
	seen := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "its arguments are not a JSON object"
		}
		k, _ := t.(string)
		switch {
		case k == key && seen:
			return fmt.Sprintf("its arguments give %q more than once", key)
		case k == key:
			seen = true
		case strings.EqualFold(k, key):
			return fmt.Sprintf("its arguments have a key %q besides or instead of %q, which the tool may read as %q", k, key, key)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "its arguments are not a JSON object"
		}
	}
	return ""
}

// patterned reports whether some rule about the tool has a pattern, so its
// arguments matter.
func (g *guarded) patterned() bool {
	for _, s := range g.chain {
		for _, c := range s.rulesFor(g.name) {
			if c.p != nil {
				return true
			}
		}
	}
	return false
}

func (g *guarded) unsure(why string) Verdict {
	return Verdict{Action: cadre.PermissionDeny, Reason: fmt.Sprintf("The call of %s was not allowed: %s, so the rules of the agent cannot be checked. Call it again with the arguments its description asks for.", g.name, why)}
}

// judgePath decides about a path: resolved first, so that a path through
// a symbolic link is judged by where it leads; a path whose destination
// cannot be told is refused.
func (g *guarded) judgePath(p string) Verdict {
	what := "the path " + clip(p, 200)
	deny := func(why string) Verdict {
		return Verdict{Action: cadre.PermissionDeny, Reason: fmt.Sprintf("%s was not allowed: %s. Do not try it again as it is; use a path the rules allow.", capital(what), why)}
	}
	root, err := g.ws.Dir()
	if err != nil {
		return deny("the workspace root cannot be found (" + err.Error() + ")")
	}
	real, err := g.ws.Resolve(p)
	if err != nil {
		if errors.Is(err, tool.ErrOutsideWorkspace) {
			return deny("it leads outside the workspace, and rules about paths only allow paths inside it")
		}
		return deny("cadre cannot tell where it leads (" + err.Error() + ")")
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return deny("it leads outside the workspace")
	}
	rel = filepath.ToSlash(rel)
	if rel == "." {
		rel = ""
	}
	ps := pathSubject{rel: rel, abs: filepath.ToSlash(real)}
	if fi, err := os.Stat(real); err == nil {
		ps.dir = fi.IsDir()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return deny("cadre cannot tell what it is (" + err.Error() + ")")
	}
	shown := what
	if rel != strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "./") && rel != "" {
		shown += " (which leads to " + rel + ")"
	}
	tree := ps.dir && (g.name == toolListFiles || g.name == toolSearchFiles)
	v := g.chain.each(func(s *Set) verdict {
		v, inexact := s.judgePath(g.name, ps, tree)
		if !inexact {
			return v
		}
		// Some of what lies below may be denied or asked about: look at
		// what is there.
		return s.walk(g.name, real, root, v)
	})
	return finish(g.name, shown, v)
}

// walk judges every file below dir, as the search or listing would reach
// it, and returns the strictest verdict; over maxWalk entries it gives up
// and refuses.
func (s *Set) walk(tool, dir, root string, bound verdict) verdict {
	worst := verdict{action: cadre.PermissionAllow, set: s}
	worstRel := ""
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil
		}
		if n++; n > maxWalk {
			return errTooMany
		}
		if d.IsDir() || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, rerr := filepath.Rel(root, p)
		if rerr != nil {
			return rerr
		}
		v, _ := s.judgePath(tool, pathSubject{rel: filepath.ToSlash(rel), abs: filepath.ToSlash(p)}, false)
		if rank(v.action) > rank(worst.action) {
			worst, worstRel = v, filepath.ToSlash(rel)
			if rank(worst.action) >= rank(bound.action) {
				return fs.SkipAll
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errTooMany):
		return verdict{action: cadre.PermissionDeny, set: s, unsure: fmt.Sprintf("holds more than %d entries, too many to check against the rules that deny or ask about some paths below it; use a narrower path", maxWalk)}
	case err != nil:
		return verdict{action: cadre.PermissionDeny, set: s, unsure: "could not be looked through (" + err.Error() + ")"}
	}
	if worstRel != "" && worst.unsure == "" {
		worst.note = "reaches " + worstRel + " below it"
	}
	return worst
}

var errTooMany = errors.New("too many entries")
