package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/model"
	"github.com/cadre-ai/cadre/tool"
)

// A project's files (.cadre/config.yaml and .mcp.json) are written by
// whoever wrote the repository, who need not be the user. Settings that
// can run a program, send data or a secret somewhere, or loosen how
// commands are confined are applied only once the user has trusted the
// project; the others, and those that tighten what the user allows, are
// applied from any project.

// keyClass is how a project's setting is treated before the user trusts
// the project.
type keyClass int

const (
	// keySafe settings choose among what the user allows already; they
	// are applied from any project.
	keySafe keyClass = iota
	// keySensitive settings are applied only from a trusted project.
	keySensitive
	// keyJudged settings are applied from any project when they keep or
	// tighten what the user's settings (or the defaults) give, and only
	// from a trusted project when they loosen it.
	keyJudged
)

// configKey is the classification of one key of the config files.
type configKey struct {
	class keyClass
	// why says what the key can do, for the table's reader.
	why string
	// loosens, for keyJudged, tells whether the project's value v, set
	// at key (as written, with map names), loosens what the user has.
	loosens func(t *trustCheck, key string, v any) bool
}

// configKeys classifies every key of fileConfig, by its path with * for
// a map's names. A key missing here is withheld from untrusted projects
// (and TestConfigKeysClassified fails until it is added).
var configKeys = map[string]configKey{
	"model":                    {keyJudged, "chooses among the providers and keys the user set up; a scripted: model reads a file of the project's choosing and makes the calls it says", loosensModel},
	"models.*.model":           {keyJudged, "names a model of a provider the user set up; a scripted: one reads a file and makes the calls it says", loosensModel},
	"models.*.toolCalling":     {keySafe, "how agents call tools", nil},
	"models.*.maxTokens":       {keySafe, "the length of a reply; the token budget still bounds a run", nil},
	"models.*.input":           {keySafe, "what a model takes (text, images)", nil},
	"providers.*.baseURL":      {keySensitive, "where prompts and the API key are sent", nil},
	"providers.*.apiKeyEnv":    {keySensitive, "which variable of the environment is sent as the API key", nil},
	"providers.*.toolCalling":  {keySafe, "how agents call tools", nil},
	"providers.*.input":        {keySafe, "what models take (text, images)", nil},
	"providers.*.maxAttempts":  {keyJudged, "more tries of failed calls spend more", loosensAttempts},
	"providers.*.stallTimeout": {keySafe, "how long a silent server is waited for", nil},
	"approve":                  {keyJudged, "approving calls without asking lets agents write and run commands", loosensApprove},
	"strict":                   {keySafe, "refuses more agent files", nil},
	"protocol":                 {keySafe, "how agents delegate", nil},
	"report":                   {keySafe, "how subagents report", nil},
	"say":                      {keySafe, "what is shown of the root's replies", nil},
	"limits.maxDepth":          {keyJudged, "deeper trees spend more", loosensLimit},
	"limits.maxConcurrent":     {keyJudged, "more agents at once spend more", loosensLimit},
	"limits.maxAgents":         {keyJudged, "more agents spend more", loosensLimit},
	"limits.budgetTokens":      {keyJudged, "a larger budget spends more", loosensLimit},
	"limits.maxTurns":          {keyJudged, "more turns spend more", loosensLimit},
	"limits.timeoutSeconds":    {keyJudged, "a longer run spends more", loosensLimit},
	"limits.maxQuestions":      {keyJudged, "more questions to the caller", loosensLimit},
	"agentsDirs":               {keyJudged, "reads agent definitions from folders outside the project", loosensOutside},
	"plugins":                  {keyJudged, "reads plugins from folders outside the project", loosensOutside},
	"store":                    {keyJudged, "writes transcripts outside the project, or sends them to a database server", loosensStore},
	"workspace":                {keyJudged, "lets the file and command tools reach folders outside the project", loosensOutside},
	"leaseTTL":                 {keySafe, "how long a run's lease lasts", nil},
	"files.allowHardLinks":     {keyJudged, "lets the file tools use files whose other names lie outside the workspace", loosensTrue},
	"agent":                    {keySafe, "which definition the root runs as", nil},
	"mcpServers.*":             {keySensitive, "starts a program, or connects to a server with headers that may carry secrets", nil},
	"sandbox.mode":             {keyJudged, "off runs commands unconfined", loosensSandbox},
	"sandbox.network":          {keyJudged, "lets commands reach the network", loosensTrue},
	"sandbox.hide":             {keySafe, "hides more from commands", nil},
	"sandbox.readOnly":         {keySensitive, "shows commands folders they do not see by default (such as ~/.ssh)", nil},
	"sandbox.writable":         {keySensitive, "lets commands change folders outside the workspace (such as ~/.bashrc)", nil},
	"sandbox.passEnv":          {keySensitive, "gives commands variables that look like secrets", nil},
	"webFetch.allow":           {keySensitive, "lets web_fetch reach loopback, private networks and cloud metadata", nil},
	"engine":                   {keyJudged, "temporal sends runs to a Temporal server", loosensEngine},
	"temporal.address":         {keySensitive, "where runs are sent", nil},
	"temporal.namespace":       {keySensitive, "where runs are sent", nil},
	"temporal.taskQueue":       {keySensitive, "which workers run them", nil},
	"temporal.tls":             {keySensitive, "how the Temporal server is reached", nil},
	"temporal.tlsCert":         {keySensitive, "a certificate presented to the server", nil},
	"temporal.tlsKey":          {keySensitive, "a private key used with the server", nil},
	"temporal.tlsCA":           {keySensitive, "which servers are believed", nil},
	"temporal.tlsServerName":   {keySensitive, "which servers are believed", nil},
	"temporal.apiKeyEnv":       {keySensitive, "which variable of the environment is sent as the API key", nil},
	"telemetry.endpoint":       {keySensitive, "where traces (and with captureContent, tasks and answers) are sent", nil},
	"telemetry.protocol":       {keySafe, "the wire format of the user's endpoint", nil},
	"telemetry.serviceName":    {keySafe, "a name on the traces", nil},
	"telemetry.captureContent": {keyJudged, "puts tasks, replies and tool results on the traces", loosensTrue},
	"prices":                   {keySafe, "what costs are shown", nil},
	"webSearch.provider":       {keySensitive, "which search service gets the queries", nil},
	"webSearch.url":            {keySensitive, "where queries (and the search key) are sent", nil},
	"webSearch.apiKeyEnv":      {keySensitive, "which variable of the environment is sent as the search key", nil},
}

// projectSetting is one sensitive setting of a project's file.
type projectSetting struct {
	// File is the file's path relative to the project (.cadre/config.yaml).
	File string `json:"file"`
	// Key is the setting's path, such as providers.openai.baseURL.
	Key string `json:"key"`
	// Value is what the file sets, as JSON.
	Value string `json:"value"`
	why   string
}

// trustCheck holds what the project's settings are judged against.
type trustCheck struct {
	a *app
	// user is the configuration of the user's own file.
	user *config
	proj string
	wd   string
}

// withhold zeroes, in v (an addressable struct of a project's file), the
// settings an untrusted project may not make, and returns them.
func (t *trustCheck) withhold(file string, v reflect.Value) []projectSetting {
	var out []projectSetting
	t.walk(file, v, "", "", &out)
	return out
}

func (t *trustCheck) walk(file string, v reflect.Value, pattern, shown string, out *[]projectSetting) {
	typ := v.Type()
	for i := range typ.NumField() {
		sf := typ.Field(i)
		name := yamlName(sf)
		if name == "" {
			continue
		}
		t.visit(file, v.Field(i), join(pattern, name), join(shown, name), out)
	}
}

// visit judges the value f at pattern (shown with its map names).
func (t *trustCheck) visit(file string, f reflect.Value, pattern, shown string, out *[]projectSetting) {
	k, ok := configKeys[pattern]
	if !ok {
		switch {
		case f.Kind() == reflect.Struct:
			t.walk(file, f, pattern, shown, out)
			return
		case f.Kind() == reflect.Map:
			keys := f.MapKeys()
			slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
			for _, key := range keys {
				e := reflect.New(f.Type().Elem()).Elem()
				e.Set(f.MapIndex(key))
				n := len(*out)
				t.visit(file, e, pattern+".*", shown+"."+key.String(), out)
				switch {
				case e.IsZero() && len(*out) > n:
					f.SetMapIndex(key, reflect.Value{}) // withheld whole
				default:
					f.SetMapIndex(key, e)
				}
			}
			return
		}
		// Not classified: withheld, to be safe.
		k = configKey{class: keySensitive, why: "not classified"}
	}
	if f.IsZero() || k.class == keySafe {
		return
	}
	if k.class == keyJudged && !k.loosens(t, shown, f.Interface()) {
		return
	}
	*out = append(*out, projectSetting{File: file, Key: shown, Value: showValue(f), why: k.why})
	f.SetZero()
}

// yamlName is the key of a field in the config files, or "" for fields
// the files do not set.
func yamlName(sf reflect.StructField) string {
	if !sf.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
	if name == "-" || name == "" {
		return ""
	}
	return name
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// showValue writes v as JSON, with its fields named as the files name
// them and unset ones left out. Control characters come out escaped, so
// a value cannot rewrite the terminal it is shown on.
func showValue(v reflect.Value) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(plain(v)); err != nil {
		return fmt.Sprintf("%q", fmt.Sprint(v.Interface()))
	}
	return strings.TrimSpace(b.String())
}

// plain turns v into maps, slices and scalars keyed by the files' names.
func plain(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return plain(v.Elem())
	case reflect.Struct:
		m := map[string]any{}
		for i := range v.NumField() {
			if name := yamlName(v.Type().Field(i)); name != "" && !v.Field(i).IsZero() {
				m[name] = plain(v.Field(i))
			}
		}
		return m
	case reflect.Map:
		m := map[string]any{}
		for _, k := range v.MapKeys() {
			m[fmt.Sprint(k.Interface())] = plain(v.MapIndex(k))
		}
		return m
	case reflect.Slice:
		s := make([]any, v.Len())
		for i := range s {
			s[i] = plain(v.Index(i))
		}
		return s
	}
	return v.Interface()
}

func loosensTrue(_ *trustCheck, _ string, v any) bool {
	b, ok := v.(*bool)
	return !ok || b == nil || *b
}

func loosensApprove(t *trustCheck, _ string, v any) bool {
	rank := map[string]int{"none": 0, "ask": 1, "all": 2}
	user := t.user.Approve
	if user == "" {
		user = "ask"
	}
	return rank[v.(string)] > rank[user]
}

func loosensSandbox(t *trustCheck, _ string, v any) bool {
	rank := map[string]int{sandboxBwrap: 0, sandboxAuto: 1, sandboxOff: 2}
	user := t.user.Sandbox.Mode
	if user == "" {
		user = sandboxAuto
	}
	return rank[v.(string)] > rank[user]
}

// loosensModel: a scripted model is a file whose replies are tool calls
// of its writer's choosing, as if a model had made them; the providers
// the user set up are chosen among freely.
func loosensModel(_ *trustCheck, _ string, v any) bool {
	prov, _, _ := model.ParseName(strings.TrimSpace(v.(string)))
	return prov == "scripted"
}

func loosensEngine(_ *trustCheck, _ string, v any) bool {
	return v.(string) != "local"
}

func loosensAttempts(t *trustCheck, key string, v any) bool {
	name := strings.TrimSuffix(strings.TrimPrefix(key, "providers."), ".maxAttempts")
	user := t.user.Providers[name].MaxAttempts
	if user == 0 {
		user = model.DefaultMaxAttempts
	}
	return v.(int) > user
}

// loosensLimit tells whether a project's limit is above the user's, or
// the default when the user sets none.
func loosensLimit(t *trustCheck, key string, v any) bool {
	u, d := t.user.Limits, cadre.Limits{}.WithDefaults()
	or := func(n, def int) int {
		if n == 0 {
			return def
		}
		return n
	}
	switch key {
	case "limits.maxDepth":
		return v.(int) > or(u.MaxDepth, d.MaxDepth)
	case "limits.maxConcurrent":
		return v.(int) > or(u.MaxConcurrent, d.MaxConcurrent)
	case "limits.maxAgents":
		return v.(int) > or(u.MaxAgents, d.MaxAgents)
	case "limits.maxTurns":
		return v.(int) > or(u.MaxTurns, d.MaxTurns)
	case "limits.maxQuestions":
		return v.(int) > or(u.MaxQuestions, d.MaxQuestions)
	case "limits.budgetTokens":
		p, user := v.(int64), u.BudgetTokens
		if user == 0 {
			user = d.BudgetTokens
		}
		return user != -1 && (p == -1 || p > user)
	case "limits.timeoutSeconds":
		user := u.timeout()
		return user > 0 && time.Duration(v.(int))*time.Second > user
	}
	return true
}

// loosensStore tells whether a store lies outside the project: a path
// there, or a database server.
func loosensStore(t *trustCheck, _ string, v any) bool {
	s := v.(string)
	if s == "none" {
		return false
	}
	if isPostgres(s) || strings.Contains(s, "://") {
		return true
	}
	return !t.inProject(absUnder(t.wd, s))
}

// loosensOutside tells whether a folder (or any of a list) lies outside
// the project.
func loosensOutside(t *trustCheck, _ string, v any) bool {
	paths, ok := v.([]string)
	if !ok {
		paths = []string{v.(string)}
	}
	for _, p := range paths {
		if !t.inProject(absUnder(t.wd, t.a.expandHome(p))) {
			return true
		}
	}
	return false
}

// inProject tells whether p is the project's folder or lies below it,
// with the links of the part of p that exists resolved.
func (t *trustCheck) inProject(p string) bool {
	proj := realPath(t.proj)
	rel, err := filepath.Rel(proj, realPath(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// realPath resolves the links of the longest part of p that exists.
func realPath(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		up := filepath.Dir(p)
		if up == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = up
	}
}

// projectFiles are a project's files as read, before any is applied.
type projectFiles struct {
	dir string
	// config is the project's .cadre/config.yaml; path is empty when it
	// has none.
	config     fileConfig
	configPath string
	// mcp are the servers of the project's .mcp.json; mcpPath is empty
	// when it has none.
	mcp     map[string]mcpServerConfig
	mcpPath string
}

// sensitive returns the settings of p an untrusted project may not make,
// and p's config file with them taken out.
func (t *trustCheck) sensitive(p *projectFiles) ([]projectSetting, fileConfig) {
	safe := p.config
	// The maps are shared with p.config: copy those the walk changes.
	safe.Models, safe.Providers, safe.MCPServers = maps.Clone(safe.Models), maps.Clone(safe.Providers), maps.Clone(safe.MCPServers)
	var out []projectSetting
	if p.configPath != "" {
		out = t.withhold(filepath.Join(".cadre", "config.yaml"), reflect.ValueOf(&safe).Elem())
	}
	for _, name := range slices.Sorted(maps.Keys(p.mcp)) {
		out = append(out, projectSetting{File: ".mcp.json", Key: "mcpServers." + name,
			Value: showValue(reflect.ValueOf(p.mcp[name])), why: configKeys["mcpServers.*"].why})
	}
	return out, safe
}

// settingsHash is the sha256 of the settings in a canonical form: the
// list of file, key and value, in the order of the files.
func settingsHash(s []projectSetting) string {
	if s == nil {
		s = []projectSetting{}
	}
	b, _ := json.Marshal(s)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// trustFile is where the user's trusted projects are recorded.
func (a *app) trustFile() string {
	home := a.home()
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".cadre", "trusted-projects.json")
}

// trustRecord is the file of trusted projects: by the project folder's
// real path, the hash of the sensitive settings the user trusted.
type trustRecord struct {
	Projects map[string]trustedProject `json:"projects"`
}

type trustedProject struct {
	SHA256    string    `json:"sha256"`
	TrustedAt time.Time `json:"trustedAt"`
}

// readTrust reads the trust record; a missing file is an empty record.
func (a *app) readTrust() (trustRecord, error) {
	rec := trustRecord{Projects: map[string]trustedProject{}}
	f := a.trustFile()
	if f == "" {
		return rec, nil
	}
	data, err := readNoFollow(f)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return rec, fmt.Errorf("read %s: %w", f, err)
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("%s: %v; remove the file to forget every trusted project", f, err)
	}
	if rec.Projects == nil {
		rec.Projects = map[string]trustedProject{}
	}
	return rec, nil
}

// writeTrust replaces the trust record, readable by the user alone: a
// new file renamed over the old, never written through a link. Its folder
// exists (setTrust made it to lock the record).
func (a *app) writeTrust(rec trustRecord) error {
	f := a.trustFile()
	if f == "" {
		return errors.New("cannot record trust: the home folder is not known (set HOME)")
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	// os.CreateTemp makes the new file readable by the user alone.
	if err := replaceFile(f, string(data)+"\n"); err != nil {
		return fmt.Errorf("record trust: %w", err)
	}
	return nil
}

// trustLockWait is how long a change of the trust record waits for
// another process's (a variable for a test).
var trustLockWait = 10 * time.Second

// setTrust records (hash non-empty) or forgets (empty) the project at dir,
// holding the record's lock from the read to the write.
func (a *app) setTrust(dir, hash string) error {
	if f := a.trustFile(); f != "" {
		if err := os.MkdirAll(filepath.Dir(f), privateDir); err != nil {
			return fmt.Errorf("record trust: %w", err)
		}
		unlock, err := lockTrust(f)
		if err != nil {
			return fmt.Errorf("record trust: %w", err)
		}
		defer unlock()
	}
	rec, err := a.readTrust()
	if err != nil {
		return err
	}
	key := realPath(dir)
	if hash == "" {
		delete(rec.Projects, key)
	} else {
		rec.Projects[key] = trustedProject{SHA256: hash, TrustedAt: time.Now().UTC().Truncate(time.Second)}
	}
	return a.writeTrust(rec)
}

// trustState is what the record says of a project's settings.
type trustState int

const (
	trustNone    trustState = iota // never trusted
	trustChanged                   // trusted, with other settings
	trustOK                        // trusted with these settings
)

func (a *app) trustStateOf(dir, hash string) (trustState, error) {
	rec, err := a.readTrust()
	if err != nil {
		return trustNone, err
	}
	p, ok := rec.Projects[realPath(dir)]
	switch {
	case !ok:
		return trustNone, nil
	case p.SHA256 != hash:
		return trustChanged, nil
	}
	return trustOK, nil
}

// describeSettings lists the settings, one a line, with what each can do.
func describeSettings(s []projectSetting) string {
	var b strings.Builder
	for _, x := range s {
		fmt.Fprintf(&b, "  %s: %s: %s\n      (%s)\n", x.File, printableKey(x.Key), tool.Printable(x.Value), x.why)
	}
	return b.String()
}

// printableKey is key as it is when it is all printable, else quoted
// with escapes (a server's name in .mcp.json may hold anything).
func printableKey(key string) string {
	if q := strconv.Quote(key); q[1:len(q)-1] != key {
		return q
	}
	return key
}

// keysOf lists the settings' keys by file, for the warning.
func keysOf(s []projectSetting) string {
	var parts []string
	for i := 0; i < len(s); {
		j := i
		var keys []string
		for ; j < len(s) && s[j].File == s[i].File; j++ {
			keys = append(keys, printableKey(s[j].Key))
		}
		parts = append(parts, s[i].File+" ("+strings.Join(keys, ", ")+")")
		i = j
	}
	return strings.Join(parts, " and ")
}

// trusted decides whether the project's sensitive settings apply: with
// --trust-project, when the record holds them, or when the user says so
// on the terminal. Otherwise they are left out with one warning.
func (a *app) trusted(dir string, s []projectSetting) (bool, error) {
	if len(s) == 0 || a.trustProject {
		return true, nil
	}
	hash := settingsHash(s)
	if d, ok := a.trustDecided[hash]; ok {
		return d, nil
	}
	state, err := a.trustStateOf(dir, hash)
	if err != nil {
		return false, err
	}
	if state == trustOK {
		return true, nil
	}
	changed := ""
	if state == trustChanged {
		changed = ", changed since you trusted it,"
	}
	decide := func(ok bool) (bool, error) {
		if a.trustDecided == nil {
			a.trustDecided = map[string]bool{}
		}
		a.trustDecided[hash] = ok
		return ok, nil
	}
	if in, ok := a.io.Stdin.(*os.File); ok && isTerminal(in) && isTerminal(a.io.Stderr) {
		fmt.Fprintf(a.errOut(), "cadre: the project %s%s sets what can run programs, send data or secrets elsewhere, or loosen confinement:\n%s",
			dir, changed, describeSettings(s))
		ans, err := a.askLine("Trust this project and use these settings? [y/N] ")
		if err != nil {
			return false, fmt.Errorf("asking whether to trust %s: %w", dir, err)
		}
		if v := strings.ToLower(strings.TrimSpace(ans)); v == "y" || v == "yes" {
			if err := a.setTrust(dir, hash); err != nil {
				return false, err
			}
			return decide(true)
		}
		fmt.Fprintf(a.errOut(), "cadre: going on without them; run cadre trust in %s to trust the project later\n", dir)
		return decide(false)
	}
	fmt.Fprintf(a.errOut(), "cadre: warning: ignoring the settings of the untrusted project %s%s that can run programs, send data or secrets elsewhere, or loosen confinement: %s. "+
		"Review them and trust the project with: cd %s && cadre trust (or pass --trust-project to trust it for one command)\n",
		dir, changed, keysOf(s), shellQuote(dir))
	return decide(false)
}

// askLine asks question on the terminal and returns the line typed; Ctrl+C
// or the end of input answer no.
func (a *app) askLine(question string) (string, error) {
	in, _ := a.io.Stdin.(*os.File)
	io.WriteString(a.errOut(), question)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-a.io.Interrupts:
			cancel()
		case <-done:
		}
	}()
	line, err := a.stdinLines(in).next(ctx)
	close(done)
	<-stopped
	cancel()
	if err != nil {
		fmt.Fprintln(a.errOut())
		return "", nil
	}
	return line, nil
}

// shellQuote quotes p for a POSIX shell when it needs quoting.
func shellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// errOut is where warnings go: stderr, or nowhere when there is none.
func (a *app) errOut() io.Writer {
	if a.io.Stderr == nil {
		return io.Discard
	}
	return a.io.Stderr
}
