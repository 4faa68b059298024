package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// procStat is what identifies a running process.
type procStat struct {
	group  int    // process group id
	start  uint64 // start time, in clock ticks after boot
	zombie bool   // ended, not yet reaped
}

// commandRecord is the file run_command keeps in Options.ProcessDir while
// an unconfined command runs: enough to find its process group later and
// to tell it, and its owner, from processes that reuse their ids.
type commandRecord struct {
	Host       string    `json:"host"`
	Boot       string    `json:"boot"`
	Owner      int       `json:"owner"`
	OwnerStart uint64    `json:"owner_start"`
	Group      int       `json:"group"`
	GroupStart uint64    `json:"group_start"`
	Command    string    `json:"command"`
	Started    time.Time `json:"started"`
}

// recordCommand writes the record of the command whose process group
// leader is pid into dir, and returns a function that removes it. The
// record is best-effort: where it cannot be written (a system without
// /proc, a folder that cannot be made), the command runs unrecorded.
func recordCommand(dir string, pid int, command string) func() {
	nothing := func() {}
	if dir == "" {
		return nothing
	}
	leader, err := procInfo(pid)
	if err != nil {
		return nothing
	}
	self, err := procInfo(os.Getpid())
	if err != nil {
		return nothing
	}
	boot, err := bootID()
	if err != nil {
		return nothing
	}
	host, _ := os.Hostname()
	if len(command) > 200 {
		command = command[:200] + "…"
	}
	rec := commandRecord{Host: host, Boot: boot, Owner: os.Getpid(), OwnerStart: self.start,
		Group: pid, GroupStart: leader.start, Command: command, Started: time.Now().UTC()}
	data, err := json.Marshal(rec)
	if err != nil {
		return nothing
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nothing
	}
	file := filepath.Join(dir, fmt.Sprintf("%d-%d.json", pid, leader.start))
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return nothing
	}
	if err := os.Rename(tmp, file); err != nil {
		_ = os.Remove(tmp)
		return nothing
	}
	return func() { _ = os.Remove(file) }
}

// A Leftover is the process group of a command that a process (cadre)
// started, unconfined, and did not live to kill.
type Leftover struct {
	// Owner is the process id of the process that ran the command.
	Owner int
	// Group is the command's process group id.
	Group int
	// Command is the command line, cut at 200 bytes.
	Command string
	// Started is when the command started.
	Started time.Time
	// Killed is how many processes of the group were killed.
	Killed int
}

// KillLeftovers kills the processes that commands of dead owners left
// running, as recorded in dir (Options.ProcessDir), and removes their
// records. It returns the groups in which it killed something.
//
// A record is acted on only when it was written on this machine since it
// last booted (others are left alone, or removed when from an earlier
// boot), and its owner is gone: no process has the owner's id with the
// owner's start time. A process is killed only when it is still in the
// command's process group and started no earlier than the command, and a
// group whose id now belongs to a new process group is left alone; the
// check and the kill go through a pidfd, so a process id reused in
// between is never hit. A command run with a Sandbox needs none of this:
// the sandbox dies with its owner.
//
// On systems other than Linux nothing is recorded and KillLeftovers
// returns nothing. A missing dir is not an error.
func KillLeftovers(dir string) ([]Leftover, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kill leftover commands: %w", err)
	}
	boot, err := bootID()
	if err != nil {
		return nil, nil
	}
	host, _ := os.Hostname()
	var out []Leftover
	for _, e := range entries {
		name := e.Name()
		file := filepath.Join(dir, name)
		if strings.HasSuffix(name, ".json.tmp") {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
				_ = os.Remove(file) // half-written by a process that died
			}
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var rec commandRecord
		if json.Unmarshal(data, &rec) != nil || rec.Group <= 1 || rec.Owner <= 0 {
			_ = os.Remove(file)
			continue
		}
		if rec.Host != host {
			continue // another machine's, sharing the folder
		}
		if rec.Boot != boot {
			_ = os.Remove(file) // everything of an earlier boot is gone
			continue
		}
		if st, err := procInfo(rec.Owner); err == nil && st.start == rec.OwnerStart && !st.zombie {
			continue // the owner lives and kills its own commands
		}
		killed := killRecorded(rec)
		_ = os.Remove(file)
		if killed > 0 {
			out = append(out, Leftover{Owner: rec.Owner, Group: rec.Group, Command: rec.Command, Started: rec.Started, Killed: killed})
		}
	}
	return out, nil
}

// killRecorded kills the processes left of a recorded command's group and
// returns how many it killed.
func killRecorded(rec commandRecord) int {
	if st, err := procInfo(rec.Group); err == nil && st.start != rec.GroupStart && st.group == rec.Group {
		return 0 // the id leads a new group now
	}
	killed := map[int]bool{}
	// A process may fork while its group is being killed: go over the
	// group again until a pass finds nothing new to kill.
	for range 10 {
		before := len(killed)
		for _, pid := range groupMembers(rec.Group) {
			if killed[pid] {
				continue
			}
			p, err := os.FindProcess(pid) // a pidfd: the process cannot change under it
			if err != nil {
				continue
			}
			if st, err := procInfo(pid); err == nil && st.group == rec.Group && st.start >= rec.GroupStart && !st.zombie {
				if p.Kill() == nil {
					killed[pid] = true
				}
			}
			_ = p.Release()
		}
		if len(killed) == before {
			break
		}
	}
	return len(killed)
}
