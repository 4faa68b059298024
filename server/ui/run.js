// One run, live: the agent tree, the root's answer as it streams, findings,
// the questions and approvals waiting, and a Stop button per agent.
//
// Events only change the model (agents keyed by id); what they change is
// marked dirty and drawn once per animation frame, touching only the rows
// and cells whose text changed, so a tree of a thousand agents stays
// responsive.
import { api, stream, openJSON, el, tokens, duration, toast } from "./api.js";

// The event types of a run the page draws.
const TYPES = new Set(["run_started", "run_resumed", "run_completed", "run_failed", "agent_started", "agent_spawned", "queued",
  "agent_completed", "agent_failed", "agent_cancelled", "agent_reported", "model_delta", "model_response", "tool_called",
  "tool_result", "finding", "agent_question", "agent_answer", "warning", "events_skipped", "say"]);

// RESTARTED is shown where a streamed reply broke off and is asked again.
const RESTARTED = "(the reply was cut off; asking again)";

// BUDGET is the most time, in ms, one frame spends drawing rows.
const BUDGET = 10;

let current = null; // the run shown, closed when the page moves on

// Measurements read by the browser test, and handy in a console.
const stats = window.cadreStats = { started: performance.now(), firstRenderMs: null, firstRenderRows: 0,
  flushes: 0, flushTotalMs: 0, flushMaxMs: 0, rows: 0, allRowsMs: null, events: 0, eventMs: 0 };

export function showRun(main, id) {
  if (current) current.close();
  current = new RunView(main, id);
}

window.addEventListener("popstate", () => { if (current && !location.pathname.startsWith("/runs/")) { current.close(); current = null; } });

class RunView {
  constructor(main, id) {
    this.id = id;
    this.agents = new Map(); // id -> agent
    this.rows = 0; // rows drawn
    this.live = 0; // agents that have not ended
    this.tokens = 0; // tokens of the whole tree
    this.dirty = new Set();
    this.frame = 0;
    this.status = "running";
    this.task = "";
    this.model = "";
    this.answer = "";
    this.streaming = "";
    this.error = "";
    this.findings = [];
    this.questions = new Map(); // agent -> question text (the root's ask_caller)
    this.approvals = [];
    this.started = null;
    this.ended = null;
    this.headDirty = this.asksDirty = this.answerDirty = this.findingsDirty = true;
    document.title = "cadre · " + id;
    this.build(main);
    this.connect();
    this.ticker = setInterval(() => this.tick(), 1000);
  }

  build(main) {
    this.$status = el("span", { class: "pill", id: "run-status" });
    this.$task = el("div", { class: "muted", id: "run-task" });
    this.$facts = el("div", { class: "facts", id: "run-facts" });
    this.$stop = el("button", { class: "danger", id: "stop-run", onclick: () => this.cancel(null) }, "Stop run");
    this.$error = el("p", { class: "error", id: "run-error" });
    this.$asks = el("div", { id: "asks" });
    this.$answer = el("div", { class: "answer", id: "answer" });
    this.$findings = el("div", { id: "findings" });
    this.$rows = el("div", { id: "agents" });
    this.$count = el("span", { class: "muted", id: "agent-count" });
    const head = el("div", { class: "hd" }, el("span", null, "Agent"), el("span", null, "Status"), el("span", null, "Definition"),
      el("span", null, "Model"), el("span", { class: "n" }, "Turns"), el("span", { class: "n" }, "Tokens"), el("span", { class: "n" }, "Time"),
      el("span", null, "Task"), el("span", null, ""));
    this.$rows.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-stop]");
      if (b) this.cancel(b.getAttribute("data-stop"));
      const t = e.target.closest("a[data-transcript]");
      if (t && !e.ctrlKey && !e.metaKey && !e.shiftKey && e.button === 0) {
        e.preventDefault();
        openJSON(t.getAttribute("href"));
      }
    });
    main.replaceChildren(
      el("section", { class: "panel" },
        el("div", { class: "runhead" }, el("div", null, el("h1", null, "Run ", el("span", { class: "mono" }, this.id), " ", this.$status), this.$task), this.$stop),
        this.$facts, this.$error),
      this.$asks,
      el("div", { class: "grid2" },
        el("section", { class: "panel" }, el("h2", null, "Answer"), this.$answer),
        el("section", { class: "panel" }, el("h2", null, "Findings"), this.$findings)),
      el("section", { class: "panel" }, el("h2", null, "Agents ", this.$count),
        el("div", { class: "tree scroll", role: "table" }, head, this.$rows)));
  }

  connect() {
    const on = (type, data) => {
      if (type === "pending") {
        this.approvals = JSON.parse(data).pending || [];
        this.asksDirty = true;
        this.schedule();
        return;
      }
      if (type === "end") { this.source.close(); this.schedule(); return; }
      if (type === "error") { // the server's error event, or a refused stream
        try { this.error = JSON.parse(data).error; } catch { /* keep */ }
        this.headDirty = true;
        this.source.close();
        this.schedule();
        return;
      }
      if (!TYPES.has(type)) return;
      const t0 = performance.now();
      stats.events++;
      let d;
      try { d = JSON.parse(data); } catch { return; }
      this.apply(type, d);
      this.schedule();
      stats.eventMs += performance.now() - t0;
    };
    this.source = stream("/api/runs/" + encodeURIComponent(this.id) + "/events", on);
  }

  close() {
    if (this.source) this.source.close();
    clearInterval(this.ticker);
    cancelAnimationFrame(this.frame);
  }

  agent(id, ev) {
    let a = this.agents.get(id);
    if (!a) {
      a = { id, parent: ev?.parent || "", depth: ev?.depth || 0, definition: "", model: "", task: "", status: "queued",
        turns: 0, tokens: 0, started: null, ended: null, row: null, cells: null, last: null, shown: {} };
      a.last = a;
      this.agents.set(id, a);
      this.live++;
      this.headDirty = true;
    }
    this.dirty.add(a);
    return a;
  }

  apply(type, d) {
    const t = d.time ? Date.parse(d.time) : Date.now();
    switch (type) {
      case "run_started":
      case "run_resumed":
        this.task = d.task || this.task; this.model = d.model || this.model;
        if (!this.started) this.started = t;
        this.status = "running"; this.ended = null;
        this.headDirty = true;
        return;
      case "run_completed":
        this.status = "done"; this.ended = t; this.answer = d.answer || this.answer; this.streaming = "";
        if (d.findings && !this.findings.length) this.findings = d.findings;
        this.headDirty = this.answerDirty = this.findingsDirty = this.asksDirty = true;
        this.questions.clear();
        return;
      case "run_failed":
        this.status = d.status || "failed"; this.ended = t; this.error = d.error || ""; this.streaming = "";
        this.headDirty = this.answerDirty = this.asksDirty = this.findingsDirty = true;
        this.questions.clear();
        return;
    }
    if (!d.agent) return;
    const a = this.agent(d.agent, d);
    switch (type) {
      case "agent_spawned":
        a.definition = d.definition || a.definition; a.model = d.model || a.model; a.task = d.task || a.task;
        if (!a.started) a.started = t;
        break;
      case "queued":
        a.status = "queued";
        break;
      case "agent_started":
        a.definition = d.definition || a.definition; a.model = d.model || a.model;
        if (a.status === "queued") a.status = "running";
        if (!a.started || d.resumed) a.started = t;
        if (a.id === "root" && !a.task) a.task = this.task;
        break;
      case "model_response":
        a.turns = Math.max(a.turns, d.turn || 0);
        const used = (d.usage?.input_tokens || 0) + (d.usage?.output_tokens || 0);
        a.tokens += used;
        this.tokens += used;
        if (a.status === "queued") a.status = "running";
        if (a.id === "root") { this.streaming = ""; if (d.text) this.answer = d.text; this.answerDirty = true; }
        this.headDirty = true;
        break;
      case "model_delta":
        // A restart voids the reply streamed so far: it broke off and the
        // model is asked again. The note stays above the new reply's text.
        if (a.id === "root") { this.streaming = d.restart ? RESTARTED + "\n" : this.streaming + (d.text || ""); this.answerDirty = true; }
        this.dirty.delete(a);
        break;
      case "agent_completed":
      case "agent_failed":
      case "agent_cancelled":
        if (!a.ended) { this.live--; this.headDirty = true; }
        a.status = type === "agent_completed" ? "done" : type === "agent_failed" ? "failed" : "cancelled";
        a.ended = t;
        a.error = d.error || d.reason;
        break;
      case "finding":
        this.findings.push({ agent: d.agent, title: d.title, content: d.content });
        this.findingsDirty = true;
        break;
      case "agent_question":
        if (!d.child && !a.parent) { this.questions.set(a.id, d.question); this.asksDirty = true; }
        break;
      case "agent_answer":
        if (!d.child && this.questions.delete(a.id)) this.asksDirty = true;
        break;
    }
    if (a.ended && this.questions.delete(a.id)) this.asksDirty = true;
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this.flush(); });
  }

  tick() {
    if (this.status !== "running") return;
    for (const a of this.agents.values()) if (!a.ended) this.dirty.add(a);
    this.headDirty = true;
    this.schedule();
  }

  // flush draws what changed since the last frame.
  flush() {
    const t0 = performance.now();
    const now = Date.now();
    // Rows are drawn in the order they changed (parents before children)
    // for at most BUDGET ms a frame; the rest wait for the next frame.
    let n = 0;
    for (const a of this.dirty) {
      this.drawAgent(a, now);
      this.dirty.delete(a);
      if (++n % 32 === 0 && performance.now() - t0 > BUDGET) break;
    }
    if (this.dirty.size) this.schedule();
    if (this.headDirty) { this.drawHead(now); this.headDirty = false; }
    if (this.asksDirty) { this.drawAsks(); this.asksDirty = false; }
    if (this.answerDirty) { this.drawAnswer(); this.answerDirty = false; }
    if (this.findingsDirty) { this.drawFindings(); this.findingsDirty = false; }
    const ms = performance.now() - t0;
    stats.flushes++; stats.flushTotalMs += ms; stats.flushMaxMs = Math.max(stats.flushMaxMs, ms);
    if (this.rows > stats.rows) {
      stats.rows = this.rows;
      if (stats.firstRenderMs === null) {
        stats.firstRenderMs = performance.now() - stats.started;
        stats.firstRenderRows = this.rows;
      }
      if (this.rows === this.agents.size) stats.allRowsMs = performance.now() - stats.started;
    }
  }

  drawAgent(a, now) {
    if (!a.row) this.insertRow(a);
    const c = a.cells, s = a.shown;
    const set = (k, v) => { if (s[k] !== v) { s[k] = v; c[k].textContent = v; } };
    if (s.status !== a.status) {
      c.status.className = "pill st-" + a.status;
      a.row.classList.toggle("ended", !!a.ended);
    }
    set("status", a.status);
    set("definition", a.definition);
    set("model", a.model);
    set("turns", String(a.turns));
    set("tokens", tokens(a.tokens));
    set("time", a.started ? duration((a.ended || now) - a.started) : "");
    set("task", a.task);
    if (s.title !== a.task) { s.title = a.task; c.task.title = a.task; }
    const asking = !!this.asking && this.asking.has(a.id);
    if (s.asking !== asking) { s.asking = asking; a.row.classList.toggle("asking", asking); }
  }

  // drawLines draws the tree's lines before an agent's name: for each of
  // its ancestors below the root, a line when more of that ancestor's
  // siblings follow; then ├ when more of its own follow, └ when it is its
  // parent's last child.
  drawLines(a) {
    let text = "";
    for (let c = a, p = this.agents.get(a.parent); p && c.depth > 0; c = p, p = this.agents.get(p.parent)) {
      const last = p.lastChild === c;
      text = (c === a ? (last ? "└ " : "├ ") : (last ? "  " : "│ ")) + text;
    }
    if (a.tw.textContent !== text) a.tw.textContent = text;
  }

  // insertRow puts a new agent's row after its parent's subtree.
  insertRow(a) {
    const name = a.id.split("/").pop();
    const cells = {
      id: el("span", { class: "id", title: a.id }, a.tw = el("span", { class: "tw" }),
        el("a", { href: "/api/runs/" + encodeURIComponent(this.id) + "/agents/" + a.id, target: "_blank", "data-transcript": true, title: a.id + ": its transcript" }, name)),
      status: el("span", { class: "pill" }), definition: el("span"), model: el("span", { class: "mono" }),
      turns: el("span", { class: "n" }), tokens: el("span", { class: "n" }), time: el("span", { class: "n" }),
      task: el("span", { class: "tk" }),
    };
    const stop = el("span", null, el("button", { class: "small danger bt", "data-stop": a.id, title: "Stop " + a.id + " and its subagents" }, "Stop"));
    a.row = el("div", { class: "ag", role: "row", "data-agent": a.id }, cells.id, el("span", null, cells.status), cells.definition,
      cells.model, cells.turns, cells.tokens, cells.time, cells.task, stop);
    a.cells = cells;
    this.rows++;
    const parent = a.parent && this.agents.get(a.parent);
    if (parent && parent.row) {
      // a is its parent's last child now: the one before it, and the rows
      // below that one, get the lines that lead on to a.
      const before = parent.lastChild;
      parent.lastChild = a;
      if (before) {
        for (let r = before.row; r; r = r.nextElementSibling) {
          const b = this.agents.get(r.dataset.agent);
          if (b) this.drawLines(b);
          if (b === before.last) break;
        }
      }
      const anchor = parent.last;
      anchor.row.after(a.row);
      for (let p = parent; p; p = p.parent ? this.agents.get(p.parent) : null) {
        if (p.last !== anchor) break;
        p.last = a;
      }
    } else {
      this.$rows.append(a.row);
    }
    this.drawLines(a);
  }

  drawHead(now) {
    this.$status.className = "pill st-" + this.status;
    this.$status.textContent = this.status;
    this.$task.textContent = this.task;
    const tok = this.tokens, live = this.live;
    const time = this.started ? duration((this.ended || now) - this.started) : "";
    this.$facts.replaceChildren(
      el("span", null, el("b", null, this.agents.size), " agents"), el("span", null, el("b", null, live), " working"),
      el("span", null, el("b", null, tokens(tok)), " tokens"), el("span", null, el("b", null, time), " elapsed"),
      this.model ? el("span", null, "model ", el("b", { class: "mono" }, this.model)) : null);
    this.$count.textContent = "(" + this.agents.size + ")";
    this.$stop.disabled = this.status !== "running";
    this.$error.textContent = this.error;
  }

  drawAnswer() {
    const text = this.streaming || this.answer;
    this.$answer.textContent = text || (this.status === "running" ? "The root agent is working…" : "No answer.");
    this.$answer.classList.toggle("streaming", !!this.streaming);
    this.$answer.classList.toggle("muted", !text);
  }

  drawFindings() {
    if (!this.findings.length) {
      this.$findings.replaceChildren(el("p", { class: "muted" }, this.status === "running" ? "None yet." : "None."));
      return;
    }
    this.$findings.replaceChildren(...this.findings.map((f) =>
      el("div", { class: "finding" }, el("div", { class: "t" }, f.title, " ", el("span", { class: "muted mono" }, f.agent)), el("div", { class: "c" }, f.content))));
  }

  drawAsks() {
    const forms = [];
    for (const [agent, q] of this.questions) {
      const input = el("textarea", { name: "answer", placeholder: "Your answer", required: true });
      const err = el("p", { class: "error" });
      const form = el("form", { class: "ask", "data-question": agent },
        el("div", null, el("span", { class: "who mono" }, agent), " asks:"), el("div", { class: "what" }, q), input,
        el("div", { class: "buttons" }, el("button", { class: "primary", type: "submit" }, "Send answer")), err);
      form.addEventListener("submit", (e) => { e.preventDefault(); this.send({ agent, answer: input.value }, err, form); });
      forms.push(form);
    }
    // An approval drawn just after an answer (in the place of the one
    // answered) takes no click for a second, and a double click answers
    // once: the second click of a double click, or a quick second one,
    // would otherwise allow a call the person never saw. guard holds, by
    // approval, when its buttons take clicks again: set when it is first
    // drawn within a second of an answer.
    const now = Date.now();
    const guard = new Map();
    for (const p of this.approvals) {
      const err = el("p", { class: "error" });
      const answer = (a) => (e) => { if (e.detail > 1) return; this.send({ id: p.id, answer: a }, err, form); };
      // The answer names the approval shown, so it answers this call and
      // no other, even if others of the same agent are waiting.
      const form = el("div", { class: "ask", "data-approval": p.agent, "data-approval-id": p.id },
        el("div", null, el("span", { class: "who mono" }, p.agent), " wants to run ", el("b", null, p.tool), ":"),
        el("div", { class: "what mono" }, p.summary),
        // What the summary does not say (a write's text, a long command,
        // arguments it cuts) is shown before the call can be allowed.
        p.detail ? el("pre", { class: "detail mono" }, p.detail) : null,
        p.rule ? el("div", { class: "muted" }, p.rule) : null,
        el("div", { class: "buttons" },
          el("button", { class: "primary", "data-answer": "yes", onclick: answer("yes") }, "Allow"),
          el("button", { class: "danger", "data-answer": "no", onclick: answer("no") }, "Deny")), err);
      const until = this.guard?.get(p.id) ?? (now - (this.answeredAt || 0) < 1000 ? now + 1000 : 0);
      guard.set(p.id, until);
      if (until > now) {
        const buttons = form.querySelectorAll("button");
        for (const b of buttons) b.disabled = true;
        setTimeout(() => { for (const b of buttons) b.disabled = false; }, until - now);
      }
      forms.push(form);
    }
    this.guard = guard;
    if (forms.length) forms.unshift(el("h2", null, "Waiting for you"));
    this.$asks.className = forms.length ? "panel" : "";
    this.$asks.replaceChildren(...forms);
    // Mark the rows of the agents that started or stopped asking.
    const asking = new Set([...this.questions.keys(), ...this.approvals.map((p) => p.agent)]);
    for (const id of new Set([...asking, ...(this.asking || [])])) {
      const a = this.agents.get(id);
      if (a) this.dirty.add(a);
    }
    this.asking = asking;
    if (this.dirty.size) this.schedule();
  }

  // send posts an answer: {agent, answer} to a question, {id, answer} to
  // an approval.
  async send(body, err, form) {
    this.answeredAt = Date.now();
    err.textContent = "";
    for (const b of form.querySelectorAll("button")) b.disabled = true;
    try {
      await api("POST", "/api/runs/" + encodeURIComponent(this.id) + "/answer", body);
      if (body.agent && this.questions.delete(body.agent)) { this.asksDirty = true; this.schedule(); }
    } catch (x) {
      err.textContent = x.message;
      for (const b of form.querySelectorAll("button")) b.disabled = false;
    }
  }

  async cancel(agent) {
    const body = agent ? { agent } : {};
    try {
      await api("POST", "/api/runs/" + encodeURIComponent(this.id) + "/cancel", body);
    } catch (x) {
      toast(x.message);
    }
  }
}
