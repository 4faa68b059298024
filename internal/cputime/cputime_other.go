//go:build !unix

// Package cputime reads the CPU time of the process, for the benchmarks
// that print it per agent or per child.
package cputime

import "time"

// Process is -1: the process's CPU time is read on Unix only.
func Process() time.Duration { return -1 }
