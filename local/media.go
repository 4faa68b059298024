package local

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/loop"
	"github.com/cadre-ai/cadre/rule"
	"github.com/cadre-ai/cadre/tool"
)

// mediaCall is a cadre.MediaTool seen as a plain tool for one call: Call
// runs CallMedia and keeps the media. So the call goes through the
// ToolRunner as every call does (arguments checked, rules, approval, the
// text redacted and traced), and its media come out beside the text
// without passing through the runner, which handles text.
type mediaCall struct {
	tool cadre.MediaTool
	// media are the result's, kept by Call until take; a runner that
	// returns before the call does leaves them to no one.
	mu    sync.Mutex
	media []cadre.Media
	taken bool
}

var (
	_ cadre.Mutator   = (*mediaCall)(nil)
	_ tool.Summarizer = (*mediaCall)(nil)
)

func (c *mediaCall) Spec() cadre.ToolSpec { return c.tool.Spec() }

func (c *mediaCall) Call(ctx context.Context, args json.RawMessage) (string, error) {
	out, err := c.tool.CallMedia(ctx, args)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if !c.taken {
		c.media = out.Media
	}
	c.mu.Unlock()
	return out.Text, nil
}

// take returns the media Call kept, once the runner has returned.
func (c *mediaCall) take() []cadre.Media {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.taken = true
	return c.media
}

// Mutates reports what the tool reports.
func (c *mediaCall) Mutates() bool { return cadre.Mutates(c.tool) }

// Summary describes a call as the tool does.
func (c *mediaCall) Summary(args json.RawMessage) string { return tool.Summarize(c.tool, args) }

// runTool runs one call of agent with t, through the engine's ToolRunner,
// guarded by rules; guarded, when not nil, is t already guarded by them.
// The media of a MediaTool's result are kept unless the result is an
// error.
func (e *Engine) runTool(ctx context.Context, agent cadre.AgentID, t, guarded cadre.Tool, rules rule.Chain, call cadre.ToolCall) loop.ToolResult {
	res := loop.ToolResult{CallID: call.ID}
	mt, ok := t.(cadre.MediaTool)
	if !ok {
		if guarded == nil && t != nil {
			guarded = rule.Guard(t, rules, e.ws)
		}
		res.Content, res.IsError = e.cfg.Runner.RunTool(ctx, agent, guarded, call)
		return res
	}
	mc := &mediaCall{tool: mt}
	res.Content, res.IsError = e.cfg.Runner.RunTool(ctx, agent, rule.Guard(mc, rules, e.ws), call)
	if media := mc.take(); !res.IsError {
		res.Media = media
	}
	return res
}
