//go:build unix

package builtin

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setGroup starts cmd in a process group of its own and makes cancelling
// its context kill the whole group and the command's own process, which
// may have left the group (setpgid into cadre's, say) and would otherwise
// be waited for without end. On Linux, the command is also killed when
// the thread that starts it ends (see startLocked), which is when cadre
// dies.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		// Through the process's handle (a pidfd on Linux), which cannot
		// reach another process that reused the id.
		if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return err
		}
		return nil
	}
}

// killGroup kills what is left of cmd's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
