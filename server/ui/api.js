// Calls of cadre's JSON API. Every error becomes an Error whose message is
// the server's {"error"} text.
//
// The server's token comes in the page's address, as #token=TOKEN (the
// fragment is neither sent to the server nor logged) or, in older links,
// ?token=TOKEN. It is taken out of the address at once and kept in this
// tab's sessionStorage, which belongs to this origin, port included, and
// sent as an Authorization header. It is never put in a cookie: the
// browser would send a cookie to every port of the host.

const TOKEN = "cadre_token";

function takeToken() {
  const frag = new URLSearchParams(location.hash.slice(1));
  const query = new URLSearchParams(location.search);
  const tok = frag.get("token") || query.get("token");
  if (!tok) return;
  try { sessionStorage.setItem(TOKEN, tok); } catch { /* storage off: the token lasts for this page */ }
  memo = tok;
  frag.delete("token");
  query.delete("token");
  const q = query.toString(), h = frag.toString();
  history.replaceState(history.state, "", location.pathname + (q ? "?" + q : "") + (h ? "#" + h : ""));
}

let memo = null;
takeToken();

function token() {
  try { return sessionStorage.getItem(TOKEN) || memo; } catch { return memo; }
}

// headers returns the request headers every call carries: the token.
function headers() {
  const tok = token();
  return tok ? { Authorization: "Bearer " + tok } : {};
}

// NEEDS_TOKEN replaces the server's 401 message, which is for programs.
const NEEDS_TOKEN = "This server needs its token: open the page with the address cadre serve printed, which ends with #token=….";

async function failure(res, what) {
  let data = null;
  try { data = await res.json(); } catch { /* not JSON */ }
  if (res.status === 401) return new Error(NEEDS_TOKEN);
  return new Error(data && data.error ? data.error : `${what} answered ${res.status}`);
}

export async function api(method, path, body) {
  const init = { method, headers: headers(), credentials: "omit" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new Error("The server cannot be reached: " + e.message);
  }
  if (!res.ok) throw await failure(res, method + " " + path);
  try { return await res.json(); } catch { return null; }
}

// stream reads a Server-Sent Events stream with fetch, which can send the
// token's header (EventSource cannot), calling on(type, data) for each
// event. Like EventSource it connects again after a dropped connection,
// from the last event id it saw; it stops when close is called, or when
// the server refuses the stream (on gets an "error" event with the
// server's {"error"}).
export function stream(path, on) {
  const ctl = new AbortController();
  let last = "";
  let closed = false;
  const wait = (ms) => new Promise((r) => setTimeout(r, ms));
  (async () => {
    while (!closed) {
      try {
        const h = headers();
        if (last) h["Last-Event-ID"] = last;
        const res = await fetch(path, { headers: h, credentials: "omit", cache: "no-store", signal: ctl.signal });
        if (!res.ok) {
          // 503 is a full server: try again later. Other refusals stand.
          if (res.status !== 503) {
            const e = await failure(res, "GET " + path);
            on("error", JSON.stringify({ error: e.message }));
            return;
          }
        } else {
          await read(res.body, (ev) => {
            if (ev.id) last = ev.id;
            if (!closed) on(ev.type, ev.data);
          });
        }
      } catch (e) {
        if (closed) return;
      }
      if (!closed) await wait(1000);
    }
  })();
  return { close() { closed = true; ctl.abort(); } };
}

// read parses an SSE body, calling emit with each event as {type, data, id}.
async function read(body, emit) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "", type = "", data = null, id = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      let line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        if (data !== null) emit({ type: type || "message", data, id });
        type = ""; data = null; id = "";
        continue;
      }
      if (line[0] === ":") continue;
      const c = line.indexOf(":");
      const field = c < 0 ? line : line.slice(0, c);
      let val = c < 0 ? "" : line.slice(c + 1);
      if (val[0] === " ") val = val.slice(1);
      if (field === "event") type = val;
      else if (field === "data") data = data === null ? val : data + "\n" + val;
      else if (field === "id") id = val;
    }
  }
}

// openJSON shows the JSON an API route answers in a new tab: a link cannot
// carry the token's header, so the page fetches it and opens a copy.
export async function openJSON(path) {
  const win = window.open("", "_blank");
  try {
    const data = await api("GET", path);
    const url = URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)], { type: "application/json" }));
    if (win) win.location.href = url; else location.href = url;
  } catch (x) {
    if (win) win.close();
    toast(x.message);
  }
}

// el builds an element: el("td", {class: "num"}, "3", child…).
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

export function tokens(n) {
  if (!n) return "0";
  if (n < 1000) return String(n);
  if (n < 1e6) return (n / 1000).toFixed(n < 1e4 ? 1 : 0) + "k";
  return (n / 1e6).toFixed(1) + "M";
}

export function duration(ms) {
  if (!(ms >= 0)) return "";
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(m / 60) + "h" + String(m % 60).padStart(2, "0") + "m";
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

export function toast(msg) {
  const t = el("div", { class: "toast", role: "alert" }, msg);
  document.body.append(t);
  setTimeout(() => t.remove(), 6000);
}
