// Command cadre runs LLM agents that delegate work to subagents.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/cadre-ai/cadre/internal/cli"
	"github.com/cadre-ai/cadre/tool/builtin"
)

func main() {
	// Before anything reads a key: commands run unconfined must not read
	// cadre's environment from /proc.
	if err := builtin.ProtectProcess(); err != nil {
		fmt.Fprintf(os.Stderr, "cadre: warning: %v; commands run without a sandbox can read cadre's environment, provider keys included\n", err)
	}
	os.Exit(cli.Main(context.Background(), os.Args[1:], cli.Stdio()))
}
