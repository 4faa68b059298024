//go:build unix

package sqlite_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used (user and system), or -1
// when it cannot be read.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
