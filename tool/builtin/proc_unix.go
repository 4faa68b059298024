//go:build unix

package builtin

import (
	"os/exec"
	"syscall"
)

// setGroup starts cmd in a process group of its own and makes cancelling
// its context kill the whole group. On Linux, the command is also killed
// when the thread that starts it ends (see startLocked), which is when
// cadre dies.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killGroup kills what is left of cmd's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
