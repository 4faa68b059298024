//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setGroup starts cmd in a process group of its own, so signals meant for
// cadre (Ctrl+C on a terminal) do not reach the server, and stopping it
// reaches the processes it started.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminate asks cmd's process group to stop.
func terminate(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
}

// kill kills what is left of cmd's process group.
func kill(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
