//go:build !unix

package builtin

import "os/exec"

// setGroup leaves cmd as it is: without process groups, cancelling kills
// the shell only.
func setGroup(*exec.Cmd) {}

// killGroup does nothing where there are no process groups.
func killGroup(*exec.Cmd) {}
