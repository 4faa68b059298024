// Command cadre runs LLM agents that delegate work to subagents.
package main

import (
	"context"
	"os"

	"github.com/cadre-ai/cadre/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], cli.Stdio()))
}
