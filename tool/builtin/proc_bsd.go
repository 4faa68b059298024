//go:build unix && !linux

package builtin

import (
	"errors"
	"syscall"
)

// groupAttr puts a command in a process group of its own.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// procInfo is not known here: commands are not recorded, and
// KillLeftovers finds nothing.
func procInfo(int) (procStat, error) { return procStat{}, errors.ErrUnsupported }

func bootID() (string, error) { return "", errors.ErrUnsupported }

func groupMembers(int) []int { return nil }

// ProtectProcess does nothing here: see its Linux form.
func ProtectProcess() error { return nil }
