//go:build unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockTrust takes the lock of the trust record at f, which every cadre
// process takes to change the record: two of them trusting projects at the
// same time would otherwise each write what it read, and one project's
// trust would be lost. It waits up to trustLockWait for another process,
// then gives up saying so. The lock is released by calling the function
// returned.
func lockTrust(f string) (func(), error) {
	lf, err := os.OpenFile(f+".lock", os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", f, err)
	}
	deadline := time.Now().Add(trustLockWait)
	for {
		err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { lf.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			lf.Close()
			return nil, fmt.Errorf("lock %s: %w", f, err)
		}
		if time.Now().After(deadline) {
			lf.Close()
			return nil, fmt.Errorf("waited %s for %s.lock, which another cadre process holds while it changes the trust record: try again once it has finished", trustLockWait, f)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
