package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/local"
	"github.com/cadre-ai/cadre/temporal"
)

// temporalConfig is the temporal section of the config: how to reach the
// Temporal service that runs agents when engine is temporal.
type temporalConfig struct {
	// Address is host:port of the Temporal frontend (default
	// 127.0.0.1:7233; env TEMPORAL_ADDRESS).
	Address string `yaml:"address"`
	// Namespace is the Temporal namespace (default "default"; env
	// TEMPORAL_NAMESPACE).
	Namespace string `yaml:"namespace"`
	// TaskQueue is the queue workers poll and runs go to (default cadre).
	TaskQueue string `yaml:"taskQueue"`
	// TLS turns TLS on; TLSCert and TLSKey are a client certificate (mTLS),
	// TLSCA the CA that signs the server's certificate, TLSServerName the
	// name to check it against.
	TLS           *bool  `yaml:"tls"`
	TLSCert       string `yaml:"tlsCert"`
	TLSKey        string `yaml:"tlsKey"`
	TLSCA         string `yaml:"tlsCA"`
	TLSServerName string `yaml:"tlsServerName"`
	// APIKeyEnv names the environment variable holding the API key (for
	// Temporal Cloud); the key itself never goes in a config file. Default
	// TEMPORAL_API_KEY.
	APIKeyEnv string `yaml:"apiKeyEnv"`
}

func (c *temporalConfig) merge(o temporalConfig) {
	for _, p := range []struct {
		dst *string
		v   string
	}{
		{&c.Address, o.Address}, {&c.Namespace, o.Namespace}, {&c.TaskQueue, o.TaskQueue},
		{&c.TLSCert, o.TLSCert}, {&c.TLSKey, o.TLSKey}, {&c.TLSCA, o.TLSCA}, {&c.TLSServerName, o.TLSServerName}, {&c.APIKeyEnv, o.APIKeyEnv},
	} {
		if p.v != "" {
			*p.dst = p.v
		}
	}
	if o.TLS != nil {
		c.TLS = o.TLS
	}
}

// temporalFlags are the flags of the commands that reach Temporal, named
// as the Temporal CLI names them.
type temporalFlags struct {
	engine string
	tc     temporalConfig
	tls    bool
}

func (f *temporalFlags) register(fl *pflag.FlagSet, engine bool) {
	if engine {
		fl.StringVar(&f.engine, "engine", "", "where agents run: local (this process) or temporal (workers of a Temporal service)")
	}
	fl.StringVar(&f.tc.Address, "address", "", "Temporal frontend host:port (env TEMPORAL_ADDRESS, default 127.0.0.1:7233)")
	fl.StringVar(&f.tc.Namespace, "namespace", "", "Temporal namespace (env TEMPORAL_NAMESPACE, default default)")
	fl.StringVar(&f.tc.TaskQueue, "task-queue", "", "Temporal task queue of cadre's workers (default cadre)")
	fl.BoolVar(&f.tls, "tls", false, "connect to Temporal with TLS (on by itself with a certificate or an API key)")
	fl.StringVar(&f.tc.TLSCert, "tls-cert-path", "", "client certificate for mTLS with Temporal")
	fl.StringVar(&f.tc.TLSKey, "tls-key-path", "", "private key of the client certificate")
	fl.StringVar(&f.tc.TLSCA, "tls-ca-path", "", "CA certificate that signs the Temporal server's certificate")
	fl.StringVar(&f.tc.TLSServerName, "tls-server-name", "", "server name to check the Temporal server's certificate against")
	fl.StringVar(&f.tc.APIKeyEnv, "api-key-env", "", "environment variable holding a Temporal Cloud API key (default TEMPORAL_API_KEY)")
}

// temporalSettings resolves how to reach Temporal: flags over the
// environment over the config files over the defaults.
func (a *app) temporalSettings(cfg *config, f *temporalFlags) temporalConfig {
	tc := temporalConfig{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: temporal.DefaultTaskQueue, APIKeyEnv: "TEMPORAL_API_KEY"}
	tc.merge(cfg.Temporal)
	tc.merge(temporalConfig{Address: a.io.Getenv("TEMPORAL_ADDRESS"), Namespace: a.io.Getenv("TEMPORAL_NAMESPACE")})
	tc.merge(f.tc)
	if f.tls {
		on := true
		tc.TLS = &on
	}
	return tc
}

// engineName is the engine a run uses: --engine, else the config's.
func engineName(cfg *config, f *temporalFlags) (string, error) {
	name := f.engine
	if name == "" {
		name = cfg.Engine
	}
	switch name {
	case "", "local":
		return "local", nil
	case "temporal":
		return name, nil
	}
	return "", fmt.Errorf("engine %q is not known: use local or temporal", name)
}

// dialTemporal connects to the Temporal service.
func (a *app) dialTemporal(ctx context.Context, tc temporalConfig) (client.Client, error) {
	opts := client.Options{HostPort: tc.Address, Namespace: tc.Namespace, Logger: quietLogger{}}
	useTLS := tc.TLS != nil && *tc.TLS
	if tc.TLSCert != "" || tc.TLSKey != "" || tc.TLSCA != "" {
		useTLS = true
	}
	if key := a.io.Getenv(tc.APIKeyEnv); key != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(key)
		useTLS = true
	}
	if useTLS {
		tlsCfg := &tls.Config{ServerName: tc.TLSServerName, MinVersion: tls.VersionTLS12}
		if tc.TLSCert != "" || tc.TLSKey != "" {
			cert, err := tls.LoadX509KeyPair(a.expandHome(tc.TLSCert), a.expandHome(tc.TLSKey))
			if err != nil {
				return nil, fmt.Errorf("temporal TLS client certificate (%s, %s): %w", tc.TLSCert, tc.TLSKey, err)
			}
			tlsCfg.Certificates = []tls.Certificate{cert}
		}
		if tc.TLSCA != "" {
			pem, err := os.ReadFile(a.expandHome(tc.TLSCA))
			if err != nil {
				return nil, fmt.Errorf("temporal TLS CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("temporal TLS CA %s holds no PEM certificate", tc.TLSCA)
			}
			tlsCfg.RootCAs = pool
		}
		opts.ConnectionOptions.TLS = tlsCfg
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %s): %w; start one with `temporal server start-dev`, or pass --address", tc.Address, tc.Namespace, err)
	}
	return c, nil
}

// quietLogger keeps the Temporal client's own logging off the terminal.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// markTemporal adds the engine to the settings a run's record keeps, so
// that cadre resume can tell a Temporal run.
func markTemporal(settings json.RawMessage) json.RawMessage {
	m := map[string]any{}
	_ = json.Unmarshal(settings, &m)
	m["engine"] = "temporal"
	b, err := json.Marshal(m)
	if err != nil {
		return settings
	}
	return b
}

// isTemporalRun reports whether a run's record says it runs on Temporal.
func isTemporalRun(rec *cadre.RunRecord) bool {
	var m struct {
		Engine string `json:"engine"`
	}
	return len(rec.Config) > 0 && json.Unmarshal(rec.Config, &m) == nil && m.Engine == "temporal"
}

// errTemporalResume is what cadre resume says of a Temporal run.
func errTemporalResume(id string) error {
	return fmt.Errorf("run %s runs on Temporal, where nothing needs resuming: its agents carry on in any `cadre worker` of its task queue; follow it with `cadre runs show --follow %s`", id, id)
}

// engineFor returns the engine a run of cfg uses, and what closes it.
func (a *app) engineFor(ctx context.Context, cfg *config, f *temporalFlags, w *wiring) (cadre.Engine, func(), error) {
	name, err := engineName(cfg, f)
	if err != nil {
		return nil, nil, err
	}
	if name == "local" {
		return local.New(w.engine), func() {}, nil
	}
	if w.store == nil {
		return nil, nil, errors.New("the temporal engine needs a store its workers share: set --store (postgres://… across machines)")
	}
	tc := a.temporalSettings(cfg, f)
	c, err := a.dialTemporal(ctx, tc)
	if err != nil {
		return nil, nil, err
	}
	lc := w.engine
	lc.Settings = markTemporal(lc.Settings)
	e, err := temporal.New(temporal.Config{Client: c, TaskQueue: tc.TaskQueue, Store: w.store, Local: lc})
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return e, c.Close, nil
}

func (a *app) newWorkerCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run agents of Temporal runs: a worker of cadre's task queue",
		Long: `Poll a Temporal task queue and carry out the runs started with
cadre run --engine temporal: the agents' workflows, their model and tool calls.
Any number of workers may serve one queue, on any machines; when one stops,
its agents carry on in another within 30 seconds.

A worker takes its agent definitions, config, models and workspace from its
working directory, as cadre run does, and writes runs to the store every
worker and cadre run share (--store, CADRE_STORE or the config: PostgreSQL
when workers run on several machines).`,
		Example: `  temporal server start-dev &
  cadre worker --store postgres://cadre@db/cadre
  cadre worker --address temporal.example.com:7233 --namespace team --task-queue cadre`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.flagConfig(&f)
			if err != nil {
				return err
			}
			if cfg.Model == "" {
				return errNoModel
			}
			return a.runWorker(cmd.Context(), cfg, &f)
		},
	}
	f.register(cmd)
	return cmd
}

// runWorker serves the task queue until the context ends or Ctrl+C.
func (a *app) runWorker(ctx context.Context, cfg *config, f *runFlags) error {
	con := a.newConsole()
	w, err := a.wire(ctx, cfg, con)
	if err != nil {
		return err
	}
	defer w.close()
	if w.store == nil {
		return errors.New("a worker needs the store that cadre run and the other workers use: set --store (postgres://… across machines, or a SQLite file for workers on this machine)")
	}
	tc := a.temporalSettings(cfg, &f.temporal)
	c, err := a.dialTemporal(ctx, tc)
	if err != nil {
		return err
	}
	defer c.Close()
	wk, err := temporal.NewWorker(temporal.Config{Client: c, TaskQueue: tc.TaskQueue, Store: w.store, Local: w.engine})
	if err != nil {
		return err
	}
	var defs []string
	for _, d := range w.engine.Definitions {
		defs = append(defs, d.Name)
	}
	files := "none"
	if len(cfg.Files) > 0 {
		files = strings.Join(cfg.Files, ", ")
	}
	fmt.Fprintf(a.io.Stderr, "cadre worker: task queue %q at %s, namespace %s\n  config: %s\n  model: %s\n  agents: %s\n  workspace: %s\n  store: %s\n",
		tc.TaskQueue, tc.Address, tc.Namespace, files, cfg.Model, orNone(strings.Join(defs, ", ")), w.workspace, a.redact.Load().String(a.storePath(cfg)))
	stop := make(chan any)
	go func() {
		select {
		case <-ctx.Done():
		case <-a.io.Interrupts:
		}
		close(stop)
	}()
	return wk.Run(stop)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
