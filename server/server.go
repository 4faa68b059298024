package server

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cadre-ai/cadre"
)

// Options configure a Server. The zero value serves an engine on
// localhost with no token, starting runs with Engine.Start.
type Options struct {
	// Start starts a run for a POST /api/runs. Nil starts it with the
	// engine's Start and refuses requests that set more than the task,
	// since the engine's settings are fixed. A Start that rejects the
	// request's settings returns a *RequestError. The request comes from
	// whoever holds the token: a Start should let it tighten the server's
	// settings (a stricter approval mode, smaller limits) but never loosen
	// them, refusing with a 403 that says what the server allows.
	Start func(ctx context.Context, req RunRequest) (string, error)
	// Approvals, when set, holds the approval requests of the runs, which
	// the API lists and answers. Nil means approvals are not answered
	// here.
	Approvals *Approvals
	// Token, when set, is required of every API and event stream request
	// as "Authorization: Bearer TOKEN". The page takes it from its address
	// (/#token=TOKEN, or ?token=TOKEN of older links), keeps it in the
	// tab's sessionStorage and sends it in that header; it is never put in
	// a cookie, which the browser would send to every port of the host.
	Token string
	// Hosts are the host names, besides localhost and IP addresses, that
	// requests may name in their Host header (the names this machine is
	// reached by). Others are refused, against DNS rebinding.
	Hosts []string
	// Redact, when set, is applied to every event before it is sent.
	Redact func(cadre.Event) cadre.Event
	// RedactText, when set, is applied to the texts of the agents the
	// engine reports (tasks, results, errors) before they are sent.
	RedactText func(string) string
	// Logger receives errors the server could not report to a client.
	// Nil discards them.
	Logger *slog.Logger
	// BodyTimeout bounds the reading of a request's body, so a client
	// that stops sending does not hold its connection open; zero means
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
	// StreamWriteTimeout bounds each write of an event stream: a client
	// that stops reading for that long is dropped. Zero means
	// DefaultStreamWriteTimeout.
	StreamWriteTimeout time.Duration
	// MaxStreams bounds the event streams open at once; more are refused
	// with a 503. Zero means DefaultMaxStreams.
	MaxStreams int
}

// Defaults of Options.
const (
	DefaultBodyTimeout        = 30 * time.Second
	DefaultStreamWriteTimeout = 30 * time.Second
	DefaultMaxStreams         = 100
)

// A RunRequest is the body of POST /api/runs: the settings of cadre run.
// Only Task is required; empty fields take the server's defaults.
type RunRequest struct {
	// Task is what the root agent is asked to do.
	Task string `json:"task"`
	// Model is the root agent's model, as provider:model or a named model.
	Model string `json:"model,omitempty"`
	// Agent is the definition the root agent runs as.
	Agent string `json:"agent,omitempty"`
	// Limits bound the run's tree.
	Limits *RunLimits `json:"limits,omitempty"`
	// Approve is the approval mode of writes and commands: ask, all or
	// none.
	Approve string `json:"approve,omitempty"`
}

// RunLimits are the limits a RunRequest may set; zero means the server's
// default.
type RunLimits struct {
	MaxDepth      int   `json:"max_depth,omitempty"`
	MaxConcurrent int   `json:"max_concurrent,omitempty"`
	MaxAgents     int   `json:"max_agents,omitempty"`
	BudgetTokens  int64 `json:"budget_tokens,omitempty"`
	MaxTurns      int   `json:"max_turns,omitempty"`
	// Timeout is a Go duration such as "10m".
	Timeout string `json:"timeout,omitempty"`
}

// Limits returns l as cadre.Limits, with the zero fields zero.
func (l *RunLimits) Limits() (cadre.Limits, error) {
	if l == nil {
		return cadre.Limits{}, nil
	}
	for _, v := range []struct {
		name string
		n    int64
	}{{"max_depth", int64(l.MaxDepth)}, {"max_concurrent", int64(l.MaxConcurrent)}, {"max_agents", int64(l.MaxAgents)}, {"max_turns", int64(l.MaxTurns)}} {
		if v.n < 0 {
			return cadre.Limits{}, &RequestError{Msg: "limits." + v.name + " is negative: give a positive number, or leave it out for the default"}
		}
	}
	if l.BudgetTokens < -1 {
		return cadre.Limits{}, &RequestError{Msg: "limits.budget_tokens is below -1: give a positive number of tokens, or -1 for no budget"}
	}
	out := cadre.Limits{MaxDepth: l.MaxDepth, MaxConcurrent: l.MaxConcurrent, MaxAgents: l.MaxAgents, BudgetTokens: l.BudgetTokens, MaxTurns: l.MaxTurns}
	if l.Timeout != "" {
		d, err := time.ParseDuration(l.Timeout)
		if err != nil || d < 0 {
			return cadre.Limits{}, &RequestError{Msg: "limits.timeout " + quote(l.Timeout) + " is not a duration: write it like 90s or 10m"}
		}
		out.Timeout = d
	}
	return out, nil
}

// A RequestError is a request the server cannot act on as it is: an
// answer of Status (400 when zero) with Msg. A request that asks for more
// than the server allows (a looser approval mode, a larger limit) is a
// 403.
type RequestError struct {
	Msg    string
	Status int
}

func (e *RequestError) Error() string { return e.Msg }

// Server is the HTTP handler of the API, the event streams and the page.
type Server struct {
	eng   cadre.Engine
	store cadre.Store
	opts  Options
	mux   *http.ServeMux
	log   *slog.Logger

	streams atomic.Int64 // event streams open
}

//go:embed ui
var uiFiles embed.FS

// oldCookie is the name of the cookie earlier versions kept the token in;
// the page expires it.
const oldCookie = "cadre_token"

// New returns a Server over eng. store, when not nil, lists the runs and
// holds the agents' transcripts; it should be the store eng writes to.
func New(eng cadre.Engine, store cadre.Store, opts Options) *Server {
	s := &Server{eng: eng, store: store, opts: opts, mux: http.NewServeMux(), log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.opts.BodyTimeout <= 0 {
		s.opts.BodyTimeout = DefaultBodyTimeout
	}
	if s.opts.StreamWriteTimeout <= 0 {
		s.opts.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if s.opts.MaxStreams <= 0 {
		s.opts.MaxStreams = DefaultMaxStreams
	}
	for _, r := range routes {
		h := r.handler(s)
		if r.api {
			h = s.authorized(h)
		}
		s.mux.Handle(r.pattern, h)
	}
	return s
}

// A route is one pattern of the server's mux. api routes need the token.
type route struct {
	pattern string
	api     bool
	handler func(*Server) http.Handler
}

// routes are every route the server answers; the OpenAPI test checks the
// API ones against openapi.json.
var routes = []route{
	{"POST /api/runs", true, func(s *Server) http.Handler { return http.HandlerFunc(s.startRun) }},
	{"GET /api/runs", true, func(s *Server) http.Handler { return http.HandlerFunc(s.listRuns) }},
	{"GET /api/runs/{run}", true, func(s *Server) http.Handler { return http.HandlerFunc(s.getRun) }},
	{"GET /api/runs/{run}/agents/{agent...}", true, func(s *Server) http.Handler { return http.HandlerFunc(s.getAgent) }},
	{"POST /api/runs/{run}/cancel", true, func(s *Server) http.Handler { return http.HandlerFunc(s.cancel) }},
	{"POST /api/runs/{run}/answer", true, func(s *Server) http.Handler { return http.HandlerFunc(s.answer) }},
	{"GET /api/runs/{run}/events", true, func(s *Server) http.Handler { return http.HandlerFunc(s.events) }},
	{"GET /api/openapi.json", false, func(s *Server) http.Handler { return http.HandlerFunc(s.openAPI) }},
	{"/api/", true, func(s *Server) http.Handler { return http.HandlerFunc(s.noRoute) }},
	{"GET /{$}", false, func(s *Server) http.Handler { return http.HandlerFunc(s.page) }},
	{"GET /runs/{run}", false, func(s *Server) http.Handler { return http.HandlerFunc(s.page) }},
	{"GET /ui/", false, func(s *Server) http.Handler { return s.assets() }},
}

// ServeHTTP checks the request's Host and, for writes and the API, its
// Origin, then routes it. A request with a body must send it within
// Options.BodyTimeout, whether its handler reads it or the server
// discards it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		// The server clears the deadline once the body has been read to
		// its end. An error means a connection without deadlines (a
		// test's recorder).
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	}
	if !s.hostAllowed(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, "this server does not answer to the host name "+quote(r.Host)+
			": open it as localhost or by its IP address, or start it with --host "+hostName(r.Host))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
		writeError(w, http.StatusForbidden, "cross-origin request refused: runs can only be started, cancelled or answered from this server's own page or from a program that sends no Origin")
		return
	}
	if strings.HasPrefix(r.URL.Path, "/api/") && !sameOrigin(r) {
		// Another site's page cannot read the answer (there are no CORS
		// headers), but without this it could still make the server hold
		// event streams open for it, up to the server's limit, keeping the
		// real page from following runs.
		writeError(w, http.StatusForbidden, "cross-origin request refused: the API answers this server's own page and programs, not other sites' pages")
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

// hostAllowed reports whether a request naming host may be answered:
// localhost, an IP address (DNS rebinding needs a name), or one of
// Options.Hosts.
func (s *Server) hostAllowed(host string) bool {
	name := hostName(host)
	if name == "" {
		return false
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") || net.ParseIP(name) != nil {
		return true
	}
	return slices.ContainsFunc(s.opts.Hosts, func(h string) bool { return strings.EqualFold(hostName(h), name) })
}

// hostName is host without its port and brackets, lower case.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

// sameOrigin reports whether a write may go on: it has no Origin (a
// program, not a page), or its Origin is this server, and the browser
// does not say it comes from another site.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// authorized lets a request through when the server has no token or the
// request carries it.
func (s *Server) authorized(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Token == "" || s.hasToken(r) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="cadre"`)
		writeError(w, http.StatusUnauthorized, "this server needs its token: open the page with the address cadre serve printed (it ends with #token=…), or send the header \"Authorization: Bearer TOKEN\"")
	})
}

func (s *Server) hasToken(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && tokenEqual(tok, s.opts.Token)
}

func tokenEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// page serves the web page, the same document for every page route; its
// script reads the path, and takes the token from the address. A cookie
// an earlier version set with the token is expired.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	if _, err := r.Cookie(oldCookie); err == nil {
		http.SetCookie(w, &http.Cookie{Name: oldCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	b, err := uiFiles.ReadFile("ui/index.html")
	if err != nil {
		writeError(w, http.StatusInternalServerError, "the page is missing from this build: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.Write(b)
}

// assets serves the page's scripts and styles.
func (s *Server) assets() http.Handler {
	sub, _ := fs.Sub(uiFiles, "ui")
	files := http.StripPrefix("/ui/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "there is no API route "+r.Method+" "+r.URL.Path+"; see /api/openapi.json for the routes")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]string{"error": "encode the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// errorStatus is the HTTP status of an error from the engine or store.
func errorStatus(err error) int {
	var re *RequestError
	switch {
	case errors.As(err, &re):
		if re.Status != 0 {
			return re.Status
		}
		return http.StatusBadRequest
	case errors.Is(err, cadre.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, cadre.ErrNotRunning), errors.Is(err, cadre.ErrNoQuestion), errors.Is(err, cadre.ErrRunOwned):
		return http.StatusConflict
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
