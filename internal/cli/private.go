package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
)

// What cadre writes under .cadre is its user's alone: the run store holds
// transcripts (file contents, command output), and agent files and the
// config say how the agents work.
const (
	privateDir  = 0o700
	privateFile = 0o600
)

// logger returns the logger CADRE_LOG asks for on stderr, or one that
// discards everything when it is not set.
func (a *app) logger() (*slog.Logger, error) {
	lvl := a.io.Getenv("CADRE_LOG")
	if lvl == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil)), nil
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(lvl)); err != nil {
		return nil, fmt.Errorf("CADRE_LOG=%s is not a log level: use debug, info, warn or error", lvl)
	}
	var out io.Writer = a.io.Stderr
	if r := a.redact.Load(); r != nil {
		out = redactWriter{a.io.Stderr, r}
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level})), nil
}

// makeStorePrivate makes the SQLite run store at loc, and the files
// SQLite keeps beside it, readable and writable by their owner only when
// other users may read or write them, as stores written by earlier
// versions of cadre may be. It says so at debug level; a file it cannot
// change is left as it is, and said at debug level too.
func makeStorePrivate(loc string, log *slog.Logger) {
	if runtime.GOOS == "windows" {
		return // permissions there are not mode bits
	}
	for _, p := range []string{loc, loc + "-wal", loc + "-shm", loc + "-journal"} {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, privateFile); err != nil {
			log.Debug("cannot make the run store private", "file", p, "mode", fi.Mode().Perm(), "err", err)
			continue
		}
		log.Debug("made the run store private: other users could read it", "file", p, "was", fi.Mode().Perm(), "now", os.FileMode(privateFile))
	}
}
