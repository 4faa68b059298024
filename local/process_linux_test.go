package local

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/memstore"
)

// identityOf is the Process field another process on this machine would
// write for itself.
func identityOf(t *testing.T, pid int) string {
	t.Helper()
	start, _, err := procStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	return machineIdentity() + ":" + start
}

func TestProcessGone(t *testing.T) {
	if machineIdentity() == "" {
		t.Skip("this system's /proc does not identify the machine and PID namespace")
	}
	self := newOwner()
	if self.Process == "" || processGone(self) {
		t.Fatalf("this process (%+v) is taken for gone", self)
	}

	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	live := cadre.LeaseOwner{PID: child.Process.Pid, Process: identityOf(t, child.Process.Pid)}
	if processGone(live) {
		t.Errorf("a running process (%+v) is taken for gone", live)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Dead but not reaped: a zombie.
	deadline := time.Now().Add(time.Minute)
	for !processGone(live) {
		if time.Now().After(deadline) {
			t.Fatal("a killed process is not taken for gone before it is reaped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	child.Wait()
	if !processGone(live) {
		t.Errorf("a killed and reaped process (%+v) is not taken for gone", live)
	}

	for name, o := range map[string]cadre.LeaseOwner{
		"AnotherMachine":   {PID: os.Getpid(), Process: "linux:another-boot:pid:[1]:" + "1"},
		"UnknownIdentity":  {PID: child.Process.Pid},
		"OtherSystem":      {PID: child.Process.Pid, Process: "darwin:1"},
		"NoPID":            {PID: 0, Process: machineIdentity() + ":1"},
		"GarbledIdentity":  {PID: child.Process.Pid, Process: "garbled"},
		"AnotherNamespace": {PID: child.Process.Pid, Process: "linux:" + "x" + ":pid:[2]:5"},
	} {
		if processGone(o) {
			t.Errorf("%s: %+v is taken for gone, though this process cannot tell", name, o)
		}
	}
	// The PID of this process with another start time: the owner's PID
	// was used again.
	if reused := (cadre.LeaseOwner{PID: os.Getpid(), Process: machineIdentity() + ":1"}); !processGone(reused) {
		t.Errorf("an owner whose PID is now another process's (%+v) is not taken for gone", reused)
	}
}

// The lease of a process of this machine that has exited is taken over at
// once, without waiting for it to expire.
func TestLeaseOfExitedProcessTakenOver(t *testing.T) {
	if machineIdentity() == "" {
		t.Skip("this system's /proc does not identify the machine and PID namespace")
	}
	checkNoLeaks(t)
	mem := memstore.New()
	id := interruptedRun(t, mem)
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	dead := cadre.LeaseOwner{Host: "this-host", PID: child.Process.Pid, Process: identityOf(t, child.Process.Pid), Token: "dead-token"}
	child.Process.Kill()
	child.Wait()
	if _, err := mem.AcquireLease(context.Background(), cadre.LeaseRequest{Run: id, Owner: dead, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if !Abandoned(leaseOf(t, mem, id)) {
		t.Fatal("Abandoned says no to the lease of an exited process")
	}
	g := newGate()
	close(g.open)
	r, err := resumeRun(New(gateConfig(g.model(), mem)), id)
	if err != nil {
		t.Fatalf("Resume of a run whose owner has exited: %v", err)
	}
	if res, err := wait(t, r); err != nil || res.Answer != "the answer" {
		t.Fatalf("the resumed run: %v, %+v", err, res)
	}
}
