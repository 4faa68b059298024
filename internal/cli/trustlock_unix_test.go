//go:build unix

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTrustRecordLocked: processes recording trust at the same time each
// keep their project (the lock serialises the read and the write), and a
// change waits for the lock, giving up with a message once it has waited
// too long.
func TestTrustRecordLocked(t *testing.T) {
	home := t.TempDir()
	a := &app{io: IO{Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}}
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		dir := filepath.Join(t.TempDir(), fmt.Sprint("project", i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs <- a.setTrust(dir, fmt.Sprintf("%064d", i)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rec, err := a.readTrust()
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Projects) != n {
		t.Errorf("%d projects recorded by %d concurrent changes, want all of them", len(rec.Projects), n)
	}

	// Another process holds the lock: a change waits, then says why it
	// gave up.
	unlock, err := lockTrust(a.trustFile())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.setTrust(t.TempDir(), strings.Repeat("1", 64)) }()
	select {
	case err := <-done:
		t.Fatalf("a change went on while another process held the lock: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	if err := <-done; err != nil {
		t.Errorf("the change, once the lock was released: %v", err)
	}

	// It gives up once it has waited too long, saying for what.
	wait := trustLockWait
	trustLockWait = 100 * time.Millisecond
	defer func() { trustLockWait = wait }()
	unlock, err = lockTrust(a.trustFile())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	err = a.setTrust(t.TempDir(), strings.Repeat("2", 64))
	if err == nil || !strings.Contains(err.Error(), "waited 100ms for "+a.trustFile()+".lock") || !strings.Contains(err.Error(), "try again") {
		t.Errorf("a change while the lock stays held: %v, want an error saying it waited for the lock", err)
	}
}
