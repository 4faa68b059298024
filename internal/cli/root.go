// Package cli implements the cadre command: flags, config files and
// environment are read here and nowhere else, turned into the Config structs
// of the library packages, and wired together.
//
// Commands never call os.Exit; Main returns the exit status.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cadre-ai/cadre/redact"
)

// IO is what a command reads and writes.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
	// Environ lists the environment as KEY=value lines; nil means it is
	// not known (tests), and the variables cadre reads through Getenv
	// are all it knows of.
	Environ func() []string
	// Dir is the working directory; empty means the process's.
	Dir string
	// Interrupts delivers Ctrl+C. The first one cancels a run gracefully,
	// the second aborts it. Nil means no signals (tests).
	Interrupts <-chan os.Signal
}

// Stdio returns the process's standard streams and environment.
func Stdio() IO {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	return IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Environ: os.Environ, Interrupts: sig}
}

// app holds what every command shares.
type app struct {
	io IO

	stdinOnce sync.Once
	stdin     *lineReader

	// redact hides the secrets of the configuration last read in the
	// error Main prints.
	redact atomic.Pointer[redact.Redactor]
	// probes remembers whether bubblewrap could run.
	probes probeCache
	// session is the interactive session (cadre chat) the runs belong
	// to, if any.
	session *chatSession

	// trustProject is --trust-project: the project's sensitive settings
	// apply without a record of trust.
	trustProject bool
	// trustDecided remembers, by the hash of a project's sensitive
	// settings, what was decided of them, so a command asks or warns once.
	trustDecided map[string]bool
	// skippedParents are the .cadre folders of parent folders left out
	// (see projectDir), each said once.
	skippedMu      sync.Mutex
	skippedParents map[string]bool
}

// exitError carries an exit status through cobra without printing twice.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Main runs the cadre command with args and returns its exit status.
func Main(ctx context.Context, args []string, stdio IO) int {
	if stdio.Getenv == nil {
		stdio.Getenv = func(string) string { return "" }
	}
	a := &app{io: stdio}
	root := a.newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdio.Stdin)
	root.SetOut(stdio.Stdout)
	root.SetErr(stdio.Stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	fmt.Fprintf(stdio.Stderr, "cadre: %v\n", a.redact.Load().Error(err))
	return code
}

func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "cadre",
		Short: "Run LLM agents that delegate work to subagents",
		Long: `cadre runs an LLM agent on a task and lets it delegate to subagents defined as
markdown files: in parallel or in sequence, in the background or while it waits,
inside limits you set, with every step recorded.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// On a terminal, cadre alone opens a session (cadre chat).
		RunE: func(cmd *cobra.Command, args []string) error {
			in, ok := a.io.Stdin.(*os.File)
			if len(args) > 0 || !ok || !isTerminal(in) || !isTerminal(a.io.Stderr) {
				return cmd.Help()
			}
			var f runFlags
			cfg, err := a.flagConfig(&f)
			if err != nil {
				return err
			}
			return a.chat(cmd.Context(), cfg, &f, "")
		},
	}
	root.PersistentFlags().BoolVar(&a.trustProject, "trust-project", false,
		"use the project's settings that run programs, send data or secrets elsewhere, or loosen confinement, for this command, without asking (see cadre trust)")
	root.AddCommand(
		a.newVersionCmd(), a.newTrustCmd(),
		a.newRunCmd(), a.newResumeCmd(), a.newContinueCmd(), a.newChatCmd(), a.newDemoCmd(),
		a.newAgentsCmd(), a.newInitCmd(),
		a.newRunsCmd(),
		a.newMCPCmd(),
		a.newServeCmd(),
		a.newWorkerCmd(),
		// Commands are listed here, one constructor per file.
	)
	return root
}

// wd returns the working directory commands resolve paths against.
func (a *app) wd() (string, error) {
	if a.io.Dir != "" {
		return a.io.Dir, nil
	}
	return os.Getwd()
}
