// Command cadre runs LLM agents that delegate work to subagents.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/cadre-ai/cadre/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], cli.Stdio())
	stop()
	os.Exit(code)
}
