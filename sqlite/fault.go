package sqlite

import (
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"
)

// A FaultError is a read or write that failed because of where the
// database is rather than what was asked of it: the disk is full, another
// program holds the database locked, the file or its folder cannot be
// written, or the disk failed. Nothing of the failed write was kept; the
// same write succeeds once the cause is gone.
type FaultError struct {
	Path string // the database file, as given to Open
	Why  string // what is wrong and what to do, in words
	Err  error  // the failure as SQLite reported it
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("sqlite: %s %s (%v)", e.Path, e.Why, e.Err)
}

func (e *FaultError) Unwrap() error { return e.Err }

const readOnly = "cannot be written: the file or its folder is read-only, or on a disk mounted read-only. " +
	"Give cadre write access to both (SQLite writes the -wal and -shm files beside it), or use another --store"

// fault returns err as a *FaultError when SQLite's code says the
// database's situation caused it, and err itself otherwise.
func fault(path string, busy fmt.Stringer, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*FaultError](err); ok {
		return err
	}
	var why string
	switch code(err) & 0xff { // the primary code
	case sqlite3.SQLITE_FULL:
		why = "is full: the disk it is on has no space left (or the database reached its size limit). Free some space"
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		why = fmt.Sprintf("is locked by another program, which has held it for longer than the %s cadre waits: "+
			"let that program finish or close it (another cadre on the same store, or a database browser with a write open)", busy)
	case sqlite3.SQLITE_READONLY:
		why = readOnly
	case sqlite3.SQLITE_CANTOPEN:
		why = "cannot be opened: its folder may have been removed, or cadre may not write in it (SQLite keeps the -wal and -shm files beside it)"
	case sqlite3.SQLITE_IOERR:
		why = "could not be read or written: the disk reported an error (it may be failing, full, or gone, as a network or removable disk can be)"
	default:
		return err
	}
	return &FaultError{Path: path, Why: why, Err: err}
}
