// Package server serves cadre over HTTP: a JSON API to start, inspect,
// cancel and answer runs, a Server-Sent Events stream of each run's events,
// and an embedded web page (the files of ui/, served as they are) that
// shows a run's agent tree live and lets a person stop agents and answer
// what they ask.
//
// A Server works over any cadre.Engine; a cadre.Store, when given, lists
// past runs and holds agents' transcripts. New returns one; it is an
// http.Handler to mount on a listener the caller owns.
//
// # The API
//
// The routes are described by the OpenAPI 3.1 document served at
// /api/openapi.json (openapi.json in this package). Errors are JSON
// objects {"error": TEXT}; bad input (an unknown run or agent, a malformed
// body, limits that are not numbers) is a 4xx, never a 500.
//
// # Events
//
// GET /api/runs/{run}/events streams a run's events as SSE: each event's
// id is its sequence number (Seq), its event name its type, and its data
// the JSON the command line's --json writes. The stream replays the run
// from its first event, or from after the Last-Event-ID header a
// reconnecting client sends, and then goes on live until the run's last
// event. Streamed text (model_delta) is sent without an id, so it never
// moves a client's Last-Event-ID. When the engine's buffer has dropped
// events for this client, they are read from the store in their place. The
// server's own state — approvals waiting for an answer — is sent as events
// named "pending", also without an id, whenever it changes.
//
// # Security
//
// A Server refuses requests whose Host header is not an address it
// answers to (Options.Hosts, localhost and IP addresses), so a web page
// cannot reach it through DNS rebinding; it refuses API requests, reads
// included, that a browser sends from another site's page (their Origin
// or Sec-Fetch-Site); and, with Options.Token set, every API request
// must carry the token as an "Authorization: Bearer" header. The page
// takes the token from its address's fragment (/#token=TOKEN, which is
// neither sent nor logged), keeps it in sessionStorage, which is per
// origin and so per port, and reads the event stream with fetch so that
// it can send the header. No cookie holds it: cookies are not kept apart
// by port, so any other server of the host would receive it.
//
// # Concurrency
//
// A Server is safe for concurrent use. Each event stream is read in the
// goroutine of its request plus one reader goroutine it owns and waits
// for; nothing outlives the request.
//
// # Bounds
//
// A request's body must arrive within Options.BodyTimeout, whether its
// handler reads it or not; a client that stalls loses its connection. At
// most Options.MaxStreams event streams are open at once, and more are
// refused with a 503. Each write to a stream must go out within
// Options.StreamWriteTimeout: a client that stops reading is dropped, and
// reconnects from its Last-Event-ID when it reads again. The listener's
// owner sets the rest (http.Server's ReadHeaderTimeout and IdleTimeout;
// not WriteTimeout, which would end every stream).
package server
