package cli

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"

	"github.com/cadre-ai/cadre"
)

// A run's record keeps the settings it was started with (runSettings), and
// cadre resume and cadre continue carry them on: its workspace, its
// folders of agents, its limits, its model. The default store lies in the
// project (.cadre/cadre.db), and a repository can bring one, whose
// recorded settings would then reach as far as a config file's that needs
// trust, and whose agents' models (scripted: files) cadre would open. So
// cadre marks the settings of the runs it records with a key of the user's
// (~/.cadre/run.key), and carries on a run of the project's own store
// without that mark only in a trusted project.

// runKeyFile is the key's file, or "" when the home folder is not known.
func (a *app) runKeyFile() string {
	home := a.home()
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".cadre", "run.key")
}

// runKey returns the user's key, made on first use; nil when it can be
// neither read nor made.
func (a *app) runKey(create bool) []byte {
	f := a.runKeyFile()
	if f == "" {
		return nil
	}
	if b, err := readNoFollow(f); err == nil && len(b) >= 32 {
		return b
	} else if !create || !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f), privateDir); err != nil {
		return nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil
	}
	out, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, privateFile)
	if err != nil {
		// Made meanwhile by another cadre: use that one.
		return a.runKey(false)
	}
	_, werr := out.Write(key)
	if cerr := out.Close(); werr != nil || cerr != nil {
		os.Remove(f)
		return nil
	}
	return key
}

// markOf is the mark of settings under key: an HMAC of their JSON without
// a mark.
func markOf(key []byte, s runSettings) string {
	s.Mark = ""
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// mark puts the user's mark on settings about to be recorded.
func (a *app) mark(s *runSettings) {
	if key := a.runKey(true); key != nil {
		s.Mark = markOf(key, *s)
	}
}

// marked reports whether settings carry the user's mark.
func (a *app) marked(s runSettings) bool {
	key := a.runKey(false)
	return key != nil && s.Mark != "" && hmac.Equal([]byte(s.Mark), []byte(markOf(key, s)))
}

// checkRecorded refuses to carry on run rec, whose recorded settings are
// s, when they come from the project's own store without the user's mark
// and the project is not trusted, and would reach further than an
// untrusted project's config may (see trust.go) — or name agents' models
// cadre would open from the store alone.
func (a *app) checkRecorded(cfg *config, rec *cadre.RunRecord, s runSettings) error {
	if a.trustProject || a.marked(s) {
		return nil
	}
	store := a.storePath(cfg)
	dir := a.projectDir()
	if store == "none" || isPostgres(store) || dir == "" {
		return nil
	}
	wd, _ := a.wd()
	t := &trustCheck{a: a, user: &config{}, proj: dir, wd: wd}
	if !t.inProject(store) {
		return nil // the user's own store
	}
	if state, err := a.trustStateOf(dir, ""); err != nil {
		return err
	} else if state != trustNone {
		return nil
	}
	user, err := a.userConfig()
	if err != nil {
		return err
	}
	t.user = user
	fc := fileConfig{Model: s.Model, Workspace: s.Workspace, AgentsDirs: s.AgentsDirs, Plugins: s.PluginDirs, Limits: s.Limits.limitsConfig}
	why := "it does not carry your mark"
	if _, err := os.Lstat(a.runKeyFile()); err == nil && a.runKey(false) == nil {
		why += fmt.Sprintf(" (your key %s cannot be read or is damaged: remove it, and cadre makes a new one for the runs it records next)", a.runKeyFile())
	}
	if held := t.withhold(filepath.Join(".cadre", "cadre.db"), reflect.ValueOf(&fc).Elem()); len(held) > 0 {
		why = "its recorded settings reach further than an untrusted project's may: " + keysOf(held)
	}
	return fmt.Errorf("run %s lies in this project's own store (%s), and %s; a repository can bring its .cadre/cadre.db, whose runs cadre would carry on with their settings and their agents' models, "+
		"so cadre carries on only the runs it recorded for you (marked with %s) in a project you have not trusted. "+
		"If the run is yours (recorded by an older cadre, or on another machine), trust the project: cd %s && cadre trust, or pass --trust-project",
		rec.ID, store, why, a.runKeyFile(), shellQuote(dir))
}

// userConfig is the user's own config file, merged.
func (a *app) userConfig() (*config, error) {
	var user fileConfig
	if home := a.home(); home != "" {
		if _, err := readConfigFile(filepath.Join(home, ".cadre", "config.yaml"), &user); err != nil {
			return nil, err
		}
	}
	c := &config{}
	c.merge(user)
	return c, nil
}

// scriptedAllowed reports whether a run may play scripted models: when its
// own model is one (the user chose it, on the command line or in a config
// that applied), or the project is trusted. An agent file of an untrusted
// project naming one gets its parent's model instead.
func (a *app) scriptedAllowed(cfg *config, m *models) bool {
	if full, err := m.resolve(cfg.Model); err == nil && providerOf(full) == "scripted" {
		return true
	}
	if a.trustProject {
		return true
	}
	dir := a.projectDir()
	if dir == "" {
		return false
	}
	state, err := a.trustStateOf(dir, "")
	return err == nil && state != trustNone
}
