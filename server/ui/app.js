// The page's entry: / lists the runs and starts new ones, /runs/{run} shows
// one run live.
import { api, el, tokens, duration, when } from "./api.js";
import { showRun } from "./run.js";

const main = document.getElementById("main");

function route() {
  const m = location.pathname.match(/^\/runs\/([^/]+)$/);
  if (m) {
    showRun(main, decodeURIComponent(m[1]));
  } else {
    showRuns();
  }
}

async function showRuns() {
  document.title = "cadre · runs";
  const err = el("p", { class: "error", id: "start-error" });
  const form = el("form", { id: "start", class: "panel" },
    el("h2", null, "Start a run"),
    el("div", { class: "field" }, el("label", { for: "task" }, "Task"),
      el("textarea", { id: "task", name: "task", required: true, placeholder: "What should the agents do?" })),
    el("div", { class: "row field" },
      el("div", null, el("label", { for: "model" }, "Model"), el("input", { id: "model", name: "model", placeholder: "server default" })),
      el("div", null, el("label", { for: "agent" }, "Root agent"), el("input", { id: "agent", name: "agent", placeholder: "generic root" })),
      el("div", null, el("label", { for: "approve" }, "Approvals"),
        el("select", { id: "approve", name: "approve" }, el("option", { value: "" }, "server default"),
          el("option", { value: "ask" }, "ask me"), el("option", { value: "all" }, "allow all"), el("option", { value: "none" }, "deny all"))),
      el("div", null, el("label", { for: "max_agents" }, "Max agents"), el("input", { id: "max_agents", name: "max_agents", type: "number", min: "0", placeholder: "default" })),
      el("div", null, el("label", { for: "max_depth" }, "Max depth"), el("input", { id: "max_depth", name: "max_depth", type: "number", min: "0", placeholder: "default" })),
      el("div", null, el("label", { for: "timeout" }, "Time limit"), el("input", { id: "timeout", name: "timeout", placeholder: "e.g. 10m" }))),
    el("button", { class: "primary", type: "submit", id: "start-button" }, "Start run"), err);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.textContent = "";
    const f = new FormData(form);
    const req = { task: f.get("task") };
    for (const k of ["model", "agent", "approve"]) if (f.get(k)) req[k] = f.get(k);
    const limits = {};
    for (const k of ["max_agents", "max_depth"]) if (f.get(k)) limits[k] = Number(f.get(k));
    if (f.get("timeout")) limits.timeout = f.get("timeout");
    if (Object.keys(limits).length) req.limits = limits;
    try {
      const { id } = await api("POST", "/api/runs", req);
      history.pushState(null, "", "/runs/" + encodeURIComponent(id));
      route();
    } catch (x) {
      err.textContent = x.message;
    }
  });

  const list = el("div", { class: "panel", id: "runs" }, el("h2", null, "Runs"), el("p", { class: "muted" }, "Loading…"));
  main.replaceChildren(el("div", { class: "grid2" }, list, form));
  try {
    const { runs } = await api("GET", "/api/runs");
    const body = el("tbody");
    for (const r of runs) {
      const end = r.ended ? Date.parse(r.ended) : (r.status === "running" ? Date.now() : NaN);
      const tok = (r.usage?.input_tokens || 0) + (r.usage?.output_tokens || 0);
      body.append(el("tr", { "data-run": r.id },
        el("td", null, el("span", { class: "pill st-" + r.status }, r.status)),
        el("td", null, el("a", { href: "/runs/" + encodeURIComponent(r.id), "data-link": true }, el("div", { class: "task" }, r.task)),
          el("div", { class: "muted mono" }, r.id)),
        el("td", { class: "num" }, r.agents), el("td", { class: "num" }, tokens(tok)),
        el("td", { class: "num muted" }, when(r.started)), el("td", { class: "num" }, duration(end - Date.parse(r.started)))));
    }
    const table = runs.length
      ? el("table", null, el("thead", null, el("tr", null, el("th", null, "Status"), el("th", null, "Task"),
          el("th", { class: "num" }, "Agents"), el("th", { class: "num" }, "Tokens"), el("th", { class: "num" }, "Started"), el("th", { class: "num" }, "Time"))), body)
      : el("p", { class: "empty" }, "No runs yet. Start one with the form.");
    list.replaceChildren(el("h2", null, "Runs"), table);
  } catch (x) {
    list.replaceChildren(el("h2", null, "Runs"), el("p", { class: "error" }, x.message));
  }
}

document.addEventListener("click", (e) => {
  const a = e.target.closest("a[data-link]");
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  history.pushState(null, "", a.getAttribute("href"));
  route();
});
window.addEventListener("popstate", route);
route();
