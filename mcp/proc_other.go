//go:build !unix

package mcp

import "os/exec"

// setGroup leaves cmd as it is where there are no process groups.
func setGroup(*exec.Cmd) {}

// terminate kills cmd: there is no gentler signal to send here.
func terminate(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// kill kills cmd.
func kill(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
