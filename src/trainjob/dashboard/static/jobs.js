// The Jobs page: every job's row, kept live by /api/jobs/stream (rows that change are replaced
// in place; nothing reloads), with filters by namespace, phase and runtime kept in the URL; above
// them the sweeps (OptimizationJobs, /api/sweeps), each linking to its page, when there are any.
// Only the newest PAGE rows that pass the filters are drawn, and "Show older" draws PAGE more:
// a browser takes seconds to lay out a thousand rows, and the page redraws as jobs change.
"use strict";

(() => {
  const { h } = TJ;
  const rows = new Map(); // "ns/name" -> row data
  const trs = new Map(); // "ns/name" -> <tr>
  const params = new URLSearchParams(location.search);
  const filters = { namespace: params.get("namespace") || "", phase: params.get("phase") || "", runtime: params.get("runtime") || "", q: params.get("q") || "" };
  const PHASES = ["Created", "Running", "Suspended", "Complete", "Failed"];
  const PAGE = 200;
  let tbody, count, older, limit = PAGE, selects = {};

  const key = (r) => r.namespace + "/" + r.name;
  // A reported value as the table shows it: 4 significant digits when it is a number.
  const short = (v) => TJ.number(v, 4);

  function cells(r) {
    return [
      h("td", { class: "ns" }, r.namespace),
      h("td", { class: "name" }, h("a", { href: TJ.jobHref(r.namespace, r.name) }, r.name)),
      h("td", { class: "runtime" }, r.runtime),
      h("td", { class: "phase-cell" }, TJ.phaseBadge(r.phase, r.reason)),
      h("td", { class: "progress" }, TJ.progressBar(r.progress)),
      h("td", { class: "eta" }, TJ.eta(r.eta)),
      h("td", { class: "loss num", title: r.loss }, r.loss === null ? "" : short(r.loss)),
      h("td", { class: "nodes num" }, r.nodes === null ? "default" : r.nodes),
      h("td", { class: "restarts num" }, r.restarts),
      h("td", { class: "age", "data-created": r.created }, TJ.age(r.created)),
    ];
  }

  function shown(r) {
    return (!filters.namespace || r.namespace === filters.namespace) &&
      (!filters.phase || r.phase === filters.phase) &&
      (!filters.runtime || r.runtime === filters.runtime) &&
      (!filters.q || r.name.includes(filters.q));
  }

  function put(r) {
    const k = key(r);
    rows.set(k, r);
    trs.delete(k); // drawn again by draw()
  }

  function drop(k) {
    rows.delete(k);
    trs.delete(k);
  }

  // The rows that pass the filters, oldest first as listed; the newest `limit` of them drawn
  // (each <tr> made once per change of its row).
  function draw() {
    const passing = [...rows.values()].filter(shown);
    const page = passing.slice(Math.max(0, passing.length - limit));
    const drawn = new Set();
    const out = page.map((r) => {
      const k = key(r);
      drawn.add(k);
      let tr = trs.get(k);
      if (!tr) {
        tr = h("tr", { "data-key": k, "data-phase": r.phase }, cells(r));
        trs.set(k, tr);
      }
      return tr;
    });
    for (const k of [...trs.keys()]) if (!drawn.has(k)) trs.delete(k);
    TJ.fill(tbody, ...out);
    const rest = passing.length - page.length;
    older.hidden = rest === 0;
    older.textContent = "Show " + Math.min(PAGE, rest) + " older (" + rest + " not shown)";
    count.textContent = passing.length + " of " + rows.size + " jobs" + (rest ? ", the newest " + page.length + " shown" : "");
  }

  function options(sel, values, current) {
    const keep = sel.value || current;
    TJ.fill(sel, h("option", { value: "" }, "all"), ...[...values].sort().map((v) => h("option", { value: v }, v)));
    sel.value = values.has(keep) ? keep : "";
  }

  function refreshFilters() {
    const ns = new Set(), rt = new Set();
    for (const r of rows.values()) { ns.add(r.namespace); if (r.runtime) rt.add(r.runtime); }
    if (filters.namespace) ns.add(filters.namespace);
    if (filters.runtime) rt.add(filters.runtime);
    options(selects.namespace, ns, filters.namespace);
    options(selects.runtime, rt, filters.runtime);
    draw();
  }

  function setFilter(name, value) {
    filters[name] = value;
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v) p.set(k, v);
    history.replaceState(null, "", p.toString() ? "?" + p : location.pathname);
    refreshFilters();
  }

  function build() {
    const main = document.getElementById("main");
    const sel = (name, label) => {
      const s = h("select", { id: "filter-" + name, onchange: (e) => setFilter(name, e.target.value) });
      selects[name] = s;
      return h("label", {}, label, " ", s);
    };
    const phase = sel("phase", "Phase");
    options(selects.phase, new Set(PHASES), filters.phase);
    count = h("span", { class: "muted", id: "count" });
    const search = h("input", { type: "search", id: "filter-q", placeholder: "name contains…", value: filters.q, oninput: (e) => setFilter("q", e.target.value) });
    tbody = h("tbody", { id: "jobs" });
    older = h("button", { class: "link", id: "older", hidden: true, onclick: () => { limit += PAGE; draw(); } });
    TJ.fill(main, 
      h("section", { class: "sweeps", id: "sweeps-section", hidden: true },
        h("h2", {}, "Sweeps"),
        h("table", { class: "sweeps" },
          h("thead", {}, h("tr", {}, ["Namespace", "Name", "Phase", "Trials", "Objective", "Best", "Best trial", "Algorithm", "Age"].map((x) => h("th", {}, x)))),
          h("tbody", { id: "sweeps" }))),
      h("h1", {}, "Jobs"),
      h("div", { class: "filters" }, sel("namespace", "Namespace"), phase, sel("runtime", "Runtime"), search, count),
      h("p", { class: "older" }, older),
      h("table", { class: "jobs" },
        h("thead", {}, h("tr", {}, ["Namespace", "Name", "Runtime", "Phase", "Progress", "ETA", "Loss", "Nodes", "Restarts", "Age"].map((x) => h("th", {}, x)))),
        tbody),
      h("p", { class: "muted empty", id: "empty", hidden: true }, "No jobs yet: trainjob run -f job.yaml"));
  }

  // -- sweeps (OptimizationJobs): their own table above the jobs, read again every few seconds --

  function sweepCells(r) {
    return [
      h("td", { class: "ns" }, r.namespace),
      h("td", { class: "name" }, h("a", { href: TJ.sweepHref(r.namespace, r.name) }, r.name)),
      h("td", { class: "phase-cell" }, TJ.phaseBadge(r.phase, r.reason)),
      h("td", { class: "trials num" }, r.finished + "/" + r.numTrials),
      h("td", { class: "objective" }, r.metric + " (" + r.direction + ")"),
      h("td", { class: "best num", title: r.bestObjective }, r.bestObjective === null ? "" : TJ.number(r.bestObjective)),
      h("td", { class: "best-trial" }, r.best ? h("a", { href: TJ.jobHref(r.namespace, r.best) }, r.best) : ""),
      h("td", { class: "algorithm" }, r.algorithm),
      h("td", { class: "age", "data-created": r.created }, TJ.age(r.created)),
    ];
  }

  async function readSweeps() {
    let d;
    try {
      d = await TJ.api("/api/sweeps");
    } catch (e) {
      return; // the jobs' stream says when the backend is away
    }
    const shownSweeps = d.sweeps.filter((r) => !filters.namespace || r.namespace === filters.namespace);
    TJ.fill(document.getElementById("sweeps"), ...shownSweeps.map((r) =>
      h("tr", { "data-key": r.namespace + "/" + r.name, "data-phase": r.phase }, sweepCells(r))));
    document.getElementById("sweeps-section").hidden = shownSweeps.length === 0;
  }

  function empty() {
    document.getElementById("empty").hidden = rows.size > 0;
  }

  document.addEventListener("DOMContentLoaded", () => {
    build();
    TJ.stream("/api/jobs/stream", {
      snapshot: (d) => {
        TJ.setNow(d.now);
        TJ.setBackend(d.backend);
        for (const k of [...rows.keys()]) drop(k);
        for (const r of d.jobs) put(r);
        refreshFilters();
        empty();
      },
      failed: (d) => { TJ.live(false); TJ.flash("cannot list the jobs: " + d.message, true); },
      changed: (d) => {
        TJ.setNow(d.now);
        for (const k of d.removed) drop(k[0] + "/" + k[1]);
        for (const r of d.jobs) put(r);
        refreshFilters();
        empty();
      },
    });
    readSweeps();
    setInterval(() => { if (!document.hidden) readSweeps(); }, 3000);
    setInterval(() => {
      for (const td of tbody.querySelectorAll("td.age")) td.textContent = TJ.age(td.dataset.created);
    }, 1000);
  });
})();
