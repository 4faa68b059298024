package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cadre-ai/cadre"
)

// keepAlive is how often an idle stream sends a comment, so proxies and
// browsers do not take it for dead.
const keepAlive = 15 * time.Second

// An item is what the reader of an event stream passes on.
type item struct {
	ev  cadre.Event
	err error
}

// events streams a run's events as SSE (see the package documentation).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("run")
	after, err := lastEventID(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if n := s.streams.Add(1); n > int64(s.opts.MaxStreams) {
		s.streams.Add(-1)
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("this server has %d event streams open, the most it serves at once: close pages of it that are not needed, and try again", s.opts.MaxStreams))
		return
	}
	defer s.streams.Add(-1)
	if _, err := s.eng.Tree(r.Context(), id); err != nil {
		s.fail(w, err, "run "+id)
		return
	}
	if _, ok := w.(http.Flusher); !ok {
		writeError(w, http.StatusInternalServerError, "this connection cannot stream events")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	ctx, cancel := context.WithCancel(r.Context())
	items := make(chan item, 256)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		defer close(items)
		for ev, err := range s.eng.Events(ctx, id) {
			select {
			case items <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})

	st := &stream{s: s, w: w, rc: http.NewResponseController(w), run: id, last: after, caught: after == 0}
	pending, changed := s.pending(id)
	if !st.pending(pending) || !st.flush() {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case it, ok := <-items:
			if !ok {
				st.write("end", "", []byte(`{}`))
				st.flush()
				return
			}
			if it.err != nil {
				if ctx.Err() == nil {
					b, _ := json.Marshal(map[string]string{"error": it.err.Error()})
					st.write("error", "", b)
					st.flush()
				}
				return
			}
			if !st.send(ctx, it.ev) {
				return
			}
			// Flush once what is waiting has been written.
			if len(items) == 0 && !st.flush() {
				return
			}
		case <-changed:
			pending, changed = s.pending(id)
			if !st.pending(pending) || !st.flush() {
				return
			}
		case <-tick.C:
			if !st.raw([]byte(": keep-alive\n\n")) || !st.flush() {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// lastEventID reads where a client resumes: the Last-Event-ID header, or
// the after query parameter for clients that cannot set headers.
func lastEventID(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	what := "the Last-Event-ID header"
	if v == "" {
		v, what = r.URL.Query().Get("after"), "the after parameter"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s is %s: it should be the id (a number) of the last event received", what, quote(v))
	}
	return n, nil
}

// A stream writes one client's events. Every write and flush must finish
// within Options.StreamWriteTimeout: a client that stops reading is
// dropped, and its handler returns.
type stream struct {
	s   *Server
	w   http.ResponseWriter
	rc  *http.ResponseController
	run string
	// last is the Seq of the last stored event sent, or the one the client
	// had.
	last int64
	// caught is set once the stream has passed the event the client had:
	// streamed text is sent from then on.
	caught bool
	buf    []byte
}

// send writes ev, or, for an EventSkipped, the stored events it stands
// for. It returns false when the client cannot be written to.
func (st *stream) send(ctx context.Context, ev cadre.Event) bool {
	if sk, ok := ev.Data.(cadre.Skipped); ok && st.s.store != nil {
		if sk.ToSeq <= st.last {
			return true // nothing stored that this client lacks
		}
		evs, err := st.s.store.Events(ctx, st.run, max(sk.AfterSeq, st.last))
		if err != nil {
			b, _ := json.Marshal(map[string]string{"error": "read the missed events from the store: " + err.Error()})
			st.write("error", "", b)
			return false
		}
		for _, e := range evs {
			if e.Seq > sk.ToSeq {
				break
			}
			if !st.send(ctx, e) {
				return false
			}
		}
		return true
	}
	if ev.Seq != 0 {
		if ev.Seq <= st.last {
			if ev.Seq == st.last {
				st.caught = true
			}
			return true
		}
		st.last, st.caught = ev.Seq, true
	} else if !st.caught {
		return true // text streamed before what the client already has
	}
	if f := st.s.opts.Redact; f != nil {
		ev = f(ev)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		st.s.log.Error("server: encode an event", "run", st.run, "type", ev.Type, "error", err)
		return true
	}
	id := ""
	if ev.Seq != 0 {
		id = strconv.FormatInt(ev.Seq, 10)
	}
	return st.write(string(ev.Type), id, b)
}

// pendingEvent is the data of a "pending" event.
type pendingEvent struct {
	Pending []Pending `json:"pending"`
}

func (st *stream) pending(p []Pending) bool {
	if p == nil {
		p = []Pending{}
	}
	b, _ := json.Marshal(pendingEvent{Pending: p})
	return st.write("pending", "", b)
}

// write writes one SSE event; data holds no newline (it is JSON).
func (st *stream) write(event, id string, data []byte) bool {
	b := st.buf[:0]
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	st.buf = b
	return st.raw(b)
}

// raw writes b within the write deadline.
func (st *stream) raw(b []byte) bool {
	st.deadline()
	_, err := st.w.Write(b)
	return err == nil
}

// flush sends what is written within the write deadline.
func (st *stream) flush() bool {
	st.deadline()
	return st.rc.Flush() == nil
}

// deadline sets the deadline of the next write. An error means a
// connection without deadlines (a test's recorder).
func (st *stream) deadline() {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.s.opts.StreamWriteTimeout))
}
