//go:build !unix

package sqlite_test

import "time"

// cpuTime is -1: the process's CPU time is read on Unix only.
func cpuTime() time.Duration { return -1 }
