//go:build !unix

package builtin

import (
	"errors"
	"os/exec"
)

// setGroup leaves cmd as it is: without process groups, cancelling kills
// the shell only.
func setGroup(*exec.Cmd) {}

// killGroup does nothing where there are no process groups.
func killGroup(*exec.Cmd) {}

// procInfo is not known here: commands are not recorded, and
// KillLeftovers finds nothing.
func procInfo(int) (procStat, error) { return procStat{}, errors.ErrUnsupported }

func bootID() (string, error) { return "", errors.ErrUnsupported }

func groupMembers(int) []int { return nil }

// ProtectProcess does nothing here: see its Linux form.
func ProtectProcess() error { return nil }
