//go:build unix

// Package cputime reads the CPU time of the process, for the benchmarks
// that print it per agent or per child.
package cputime

import (
	"syscall"
	"time"
)

// Process is the CPU time the process has used (user and system), or -1
// when it cannot be read.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
