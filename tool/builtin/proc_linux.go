package builtin

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// groupAttr puts a command in a process group of its own and has the
// kernel kill it (SIGKILL) when the thread that started it ends. That
// thread is locked to the goroutine that waits for the command (see
// startLocked), so it ends only after the command, or with cadre.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// procInfo reads what identifies a running process: its process group,
// its start time (clock ticks after boot, which a reused process id does
// not share) and whether it is a zombie.
func procInfo(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name, in parentheses, may hold spaces: the fields
	// that follow start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 of proc(5): state; pgrp is field 5, starttime 22.
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	pgrp, err1 := strconv.Atoi(f[2])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return procStat{group: pgrp, start: start, zombie: f[0] == "Z" || f[0] == "X"}, nil
}

// bootID identifies the current boot of the machine: process start
// times are counted from it.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b)), err
}

// groupMembers returns the processes of group pgid.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := procInfo(pid); err == nil && st.group == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// ProtectProcess keeps the commands the current process runs unconfined,
// which run as the same user, from reading its environment and memory
// (/proc/PID/environ, /proc/PID/mem, ptrace), where provider keys are
// that CleanEnv keeps from the commands' own environment. On Linux it
// marks the process not dumpable (prctl PR_SET_DUMPABLE 0), which also
// turns off its core dumps; a process with CAP_SYS_PTRACE (root) can
// still read it. Elsewhere it does nothing. Call it once, at start-up.
func ProtectProcess() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("mark the process not dumpable, to keep commands from reading its environment: %w", err)
	}
	return nil
}
