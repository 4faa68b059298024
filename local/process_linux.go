package local

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/cadre-ai/cadre"
)

// On Linux a process is known by the machine's boot, its PID namespace, its
// PID and its start time (in clock ticks since boot), so that a PID used
// again by another process is not taken for the owner.

// machineIdentity names this boot of this machine and this PID namespace,
// or "" when /proc does not say.
func machineIdentity() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return "linux:" + strings.TrimSpace(string(boot)) + ":" + ns
}

// processIdentity identifies this process for cadre.LeaseOwner.Process.
func processIdentity() string {
	m := machineIdentity()
	if m == "" {
		return ""
	}
	start, _, err := procStat(os.Getpid())
	if err != nil {
		return ""
	}
	return m + ":" + start
}

// processGone reports whether o's process ran on this machine, in this PID
// namespace, and has exited. When that cannot be told, it says no.
func processGone(o cadre.LeaseOwner) bool {
	m, start, ok := cutLast(o.Process)
	if !ok || m == "" || m != machineIdentity() || o.PID <= 0 {
		return false
	}
	now, state, err := procStat(o.PID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true
	case err != nil:
		return false
	}
	// Another process with that PID, or the owner dead and not yet reaped.
	return now != start || state == "Z" || state == "X"
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// procStat returns a process's start time and state from /proc/PID/stat.
func procStat(pid int) (start, state string, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", "", err
	}
	// The command name, in parentheses, may hold anything: the fields
	// that follow it are after its last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", "", errors.New("unexpected format of /proc/PID/stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 is the start time.
	if len(f) < 20 {
		return "", "", errors.New("unexpected format of /proc/PID/stat")
	}
	return f[19], f[0], nil
}
