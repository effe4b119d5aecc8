// A job's page: summary, progress and a curve per reported metric (growing as reports come,
// /api/jobs/NS/NAME/stream), phases over time, conditions, steps, events, a step's live log, the TrainJob and its
// Plan as YAML; suspend, resume and delete behind a confirmation.
"use strict";

(() => {
  const { h } = TJ;
  const parts = location.pathname.split("/").map(decodeURIComponent); // ["", "jobs", ns, name]
  const ns = parts[2], name = parts[3];
  const base = "/api/jobs/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name);
  const points = []; // every progress report: {time, progress, values}
  const charts = new Map(); // metric -> {el, plot}
  let job = null, logSource = null, logStep = "", sections = {};

  // -- curves ---------------------------------------------------------------------------------

  const STEP_KEYS = ["step", "current_step", "global_step"];
  function stepKey() {
    // x: the step the job reports (the LLM trainer's current_step, or step), else time.
    return STEP_KEYS.find((k) => points.some((p) => p.values[k] !== undefined)) || null;
  }

  function xOf(p, i, key) {
    if (key && p.values[key] !== undefined) return p.values[key];
    const t0 = Date.parse(points[0].time), t = Date.parse(p.time);
    return isNaN(t) || isNaN(t0) ? i : (t - t0) / 1000;
  }

  function metricNames() {
    const names = new Set();
    const key = stepKey();
    for (const p of points) for (const k of Object.keys(p.values)) if (k !== key) names.add(k);
    const first = ["loss", "train_loss", "eval_loss", "learning_rate", "lr", "tokens_per_second"];
    return [...names].sort((a, b) => {
      const ia = first.indexOf(a), ib = first.indexOf(b);
      return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || a.localeCompare(b);
    });
  }

  function drawCurves() {
    const box = sections.curves;
    const names = metricNames();
    const key = stepKey();
    const xLabel = key || "seconds";
    document.getElementById("curves-empty").hidden = names.length > 0;
    for (const m of names) {
      const xs = [], ys = [];
      let lastX = 0;
      points.forEach((p, i) => {
        // A report without the step key sits at the last step reported (x never goes back).
        const x = key && p.values[key] === undefined ? lastX : xOf(p, i, key);
        lastX = Math.max(lastX, x);
        if (p.values[m] !== undefined) { xs.push(Math.max(x, xs.length ? xs[xs.length - 1] : x)); ys.push(p.values[m]); }
      });
      let c = charts.get(m);
      if (!c) {
        const el = h("div", { class: "chart", "data-metric": m });
        box.append(h("figure", {}, h("figcaption", {}, m), el));
        const opts = {
          width: Math.min(560, Math.max(320, box.clientWidth / 2 - 24)), height: 220,
          scales: { x: { time: false } },
          series: [{ label: xLabel }, { label: m, stroke: "#2563eb", width: 2, points: { show: xs.length < 60 } }],
          axes: [{ label: xLabel }, { size: 64, values: (u, vals) => vals.map(TJ.tick) }],
          legend: { show: false },
        };
        c = { el, plot: typeof uPlot === "function" ? new uPlot(opts, [xs, ys], el) : null };
        charts.set(m, c);
      } else if (c.plot) {
        c.plot.setData([xs, ys]);
      }
      c.el.dataset.points = String(ys.length);
      c.el.dataset.last = ys.length ? String(ys[ys.length - 1]) : "";
    }
    // Loss first, then the rest, whatever order the metrics first came in.
    for (const m of names) box.append(charts.get(m).el.parentNode);
  }

  // -- summary, tables ------------------------------------------------------------------------

  function kv(pairs) {
    return h("dl", { class: "kv" }, pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  }

  function actions(j) {
    const btn = (label, verb, danger) => h("button", { type: "button", id: "action-" + verb, class: danger ? "danger" : "", onclick: () => act(verb) }, label);
    const finished = j.phase === "Complete" || j.phase === "Failed";
    return h("div", { class: "actions" },
      !finished && !j.suspended ? btn("Suspend", "suspend") : null,
      !finished && j.suspended ? btn("Resume", "resume") : null,
      btn("Delete", "delete", true));
  }

  async function act(verb) {
    const what = "TrainJob " + ns + "/" + name;
    const text = {
      suspend: "Its running pods are stopped; Resume starts them again.",
      resume: "Its pods start again.",
      delete: "Its pods are stopped and the job is removed from the list. Its logs go with it.",
    }[verb];
    const label = verb[0].toUpperCase() + verb.slice(1);
    if (!(await TJ.confirm(label + " " + what + "?", text, label))) return;
    try {
      const r = await TJ.api(base + (verb === "delete" ? "" : "/" + verb), { method: verb === "delete" ? "DELETE" : "POST" });
      TJ.flash(r.message);
      if (verb === "delete") setTimeout(() => { location.href = "/"; }, 800);
    } catch (e) {
      TJ.flash(String(e.message || e), true);
    }
  }

  function phases(segments) {
    // A bar of the job's phases, each as wide as it lasted (the current one grows until the
    // next update), then the same as a table: phase, from, for how long, why.
    if (!segments.length) return [h("p", { class: "muted" }, "None yet.")];
    const total = segments.reduce((a, s) => a + s.seconds, 0) || 1;
    const bar = h("div", { class: "timeline", id: "timeline" }, segments.map((s, i) =>
      h("span", {
        class: "seg phase-" + s.phase.toLowerCase(), "data-phase": s.phase, "data-index": String(i),
        title: s.phase + " from " + s.start + (s.end ? " to " + s.end : ", ongoing") + " (" + s.reason + ")",
        style: "flex-grow:" + Math.max(s.seconds / total, 0.02).toFixed(4),
      }, s.phase)));
    const rows = segments.map((s) => h("tr", { "data-phase": s.phase },
      h("td", {}, TJ.phaseBadge(s.phase, s.reason)), h("td", {}, s.start),
      h("td", { class: "num" }, s.end === null ? TJ.duration(s.seconds) + " so far" : TJ.duration(s.seconds)),
      h("td", { class: "msg" }, s.reason)));
    return [bar, TJ.table(["Phase", "From", "For", "Reason"], rows, { class: "phases" })];
  }

  function render(j) {
    job = j;
    document.title = j.name + " · trainjob";
    const p = j.progressDetail;
    TJ.fill(sections.crumbs, h("a", { href: "/" }, "Jobs"), " / ", ns, " / ",
      j.sweep ? [h("a", { href: TJ.sweepHref(ns, j.sweep) }, j.sweep), " / "] : null, name);
    TJ.fill(sections.head,
      h("h1", {}, j.name, " ", TJ.phaseBadge(j.phase, j.reason)),
      actions(j));
    TJ.fill(sections.summary, kv([
      ["Namespace", j.namespace], ["Sweep", j.sweep ? h("a", { href: TJ.sweepHref(j.namespace, j.sweep), id: "sweep-link" }, j.sweep) : null], ["Runtime", j.runtime], ["Phase", j.phase + (j.reason ? " (" + j.reason + ")" : "")],
      ["Message", j.message], ["Nodes", j.nodes === null ? "runtime's default" : j.nodes], ["Restarts", j.restarts],
      ["Created", j.created], ["Started", j.started], ["Completed", j.completed], ["Age", TJ.age(j.created)],
      ...j.outputs.map((o, i) => [i ? "" : "Output", o.location + (o.description ? "  (" + o.description + ")" : "")]),
      ["Logs", j.logLocation],
    ]));
    TJ.fill(sections.progress, 
      p ? kv([["Progress", TJ.progressBar(p.percent)], ["ETA", TJ.eta(p.eta)], ["Updated", p.updated]]) : h("p", { class: "muted" }, "No progress reported yet."),
      p && Object.keys(p.metrics).length ? TJ.table(["Metric", "Value"], Object.entries(p.metrics).map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", { class: "num", title: v }, TJ.number(v)))), { class: "metrics" }) : null);
    TJ.fill(sections.phases, ...phases(j.timeline));
    TJ.fill(sections.conditions, j.conditions.length ? TJ.table(["Type", "Status", "Reason", "Message", "Last transition"],
      j.conditions.map((c) => h("tr", {}, h("td", {}, c.type), h("td", {}, c.status), h("td", {}, c.reason), h("td", { class: "msg" }, c.message), h("td", {}, c.time)))) : h("p", { class: "muted" }, "None."));
    TJ.fill(sections.jobs, j.jobs.length ? TJ.table(["Job", "Ready", "Succeeded", "Failed", "Active", "Suspended"],
      j.jobs.map((x) => h("tr", {}, h("td", {}, x.name), h("td", {}, x.ready), h("td", {}, x.succeeded), h("td", {}, x.failed), h("td", {}, x.active), h("td", {}, x.suspended)))) : h("p", { class: "muted" }, "None."));
    TJ.fill(sections.steps, j.pods.length ? TJ.table(["Step", "Pod", "Phase", "Ready", "Exit code", "Restarts", "Started", "Finished", "Message", ""],
      j.pods.map((x) => h("tr", { "data-step": x.step },
        h("td", {}, x.step), h("td", {}, x.name), h("td", {}, x.phase), h("td", {}, x.ready ? "yes" : "no"),
        h("td", {}, x.exitCode === null ? "" : x.exitCode), h("td", {}, x.restarts), h("td", {}, x.started || ""), h("td", {}, x.finished || ""),
        h("td", { class: "msg" }, x.message),
        h("td", {}, x.logs ? h("button", { type: "button", class: "link", onclick: () => openLog(x.step) }, "logs") : "")))) : h("p", { class: "muted" }, "No pods yet."));
    TJ.fill(sections.events, j.events.length ? TJ.table(["Type", "Reason", "Age", "From", "Message"],
      j.events.map((e) => h("tr", { class: e.type === "Warning" ? "warn" : "" }, h("td", {}, e.type), h("td", {}, e.reason), h("td", { "data-created": e.time }, TJ.age(e.time)), h("td", {}, e.object), h("td", { class: "msg" }, e.message)))) : h("p", { class: "muted" }, "None."));
    const steps = j.pods.filter((x) => x.logs).map((x) => x.step);
    const sel = document.getElementById("log-step");
    const have = [...sel.options].map((o) => o.value).join(",");
    if (have !== steps.join(",")) {
      TJ.fill(sel, ...steps.map((s) => h("option", { value: s }, s)));
      if (logStep && steps.includes(logStep)) sel.value = logStep;
    }
    // First the trainer's first pod (launcher-0 for MPI, else node-0), as `trainjob logs` does.
    const first = steps.find((x) => x === "launcher-0") || steps.find((x) => x === "node-0") || steps[0];
    if (!logStep && first) openLog(first);
  }

  // -- logs -----------------------------------------------------------------------------------

  const MAX_LOG_LINES = 20000;
  let logLines = 0;

  function openLog(step) {
    if (logSource) logSource.close();
    logStep = step;
    const follow = document.getElementById("log-follow").checked;
    document.getElementById("log-step").value = step;
    const pre = document.getElementById("log");
    TJ.fill(pre);
    logLines = 0;
    const state = document.getElementById("log-state");
    state.textContent = follow ? "following…" : "";
    const url = base + "/logs?step=" + encodeURIComponent(step) + (follow ? "&follow=1" : "");
    logSource = TJ.stream(url, {
      lines: (d) => {
        const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.append(document.createTextNode(d.lines.join("\n") + "\n"));
        logLines += d.lines.length;
        while (logLines > MAX_LOG_LINES && pre.firstChild) { logLines -= (pre.firstChild.textContent.match(/\n/g) || []).length; pre.firstChild.remove(); }
        pre.dataset.lines = String(logLines);
        if (atBottom) pre.scrollTop = pre.scrollHeight;
      },
      end: (d, es) => { es.close(); state.textContent = "end of log"; },
      failed: (d, es) => { es.close(); state.textContent = d.message; },
    });
  }

  // -- YAML -----------------------------------------------------------------------------------

  async function showText(which) {
    const pre = document.getElementById("yaml");
    for (const b of document.querySelectorAll("[data-yaml]")) b.classList.toggle("here", b.dataset.yaml === which);
    pre.textContent = "Loading…";
    try {
      pre.textContent = await TJ.api(base + "/" + which);
    } catch (e) {
      pre.textContent = String(e.message || e);
    }
  }

  // -- the page -------------------------------------------------------------------------------

  function section(id, title, ...extra) {
    const body = h("div", { id: id });
    sections[id] = body;
    return h("section", { class: "card", id: "section-" + id }, h("h2", {}, title), ...extra, body);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const main = document.getElementById("main");
    sections.head = h("div", { class: "head", id: "head" }, h("h1", {}, name));
    sections.crumbs = h("p", { class: "crumbs", id: "crumbs" }, h("a", { href: "/" }, "Jobs"), " / ", ns, " / ", name);
    const logBar = h("div", { class: "logbar" },
      h("label", {}, "Step ", h("select", { id: "log-step", onchange: (e) => openLog(e.target.value) })),
      h("label", {}, h("input", { type: "checkbox", id: "log-follow", checked: true, onchange: () => logStep && openLog(logStep) }), " follow"),
      h("span", { class: "muted", id: "log-state" }));
    const yamlBar = h("div", { class: "tabs" },
      h("button", { type: "button", "data-yaml": "yaml", onclick: () => showText("yaml") }, "TrainJob"),
      h("button", { type: "button", "data-yaml": "plan", onclick: () => showText("plan") }, "Plan"));
    TJ.fill(main, 
      sections.crumbs,
      sections.head,
      h("div", { class: "grid" }, section("summary", "Summary"), section("progress", "Progress")),
      section("curves", "Metrics", h("p", { class: "muted", id: "curves-empty" }, "No metric reported yet: the curves grow as the job reports (trainjob.update_trainjob_status).")),
      section("steps", "Steps"),
      h("section", { class: "card", id: "section-logs" }, h("h2", {}, "Logs"), logBar, h("pre", { class: "log", id: "log", "data-lines": "0" })),
      section("phases", "Phases"),
      h("div", { class: "grid" }, section("conditions", "Conditions"), section("jobs", "Jobs")),
      section("events", "Events"),
      h("section", { class: "card", id: "section-yaml" }, h("h2", {}, "YAML"), yamlBar, h("pre", { class: "yaml", id: "yaml" })));
    sections.curves.classList.add("curves");
    TJ.stream(base + "/stream", {
      detail: (d) => { TJ.setNow(d.now); render(d.job); },
      failed: (d) => { TJ.live(false); TJ.flash("cannot read the job: " + d.message, true); },
      metrics: (d) => { points.push(...d.points); drawCurves(); },
      gone: (d, es) => {
        es.close();
        TJ.live(false);
        TJ.fill(sections.head, h("h1", {}, name, " ", h("span", { class: "phase phase-gone" }, "Deleted")));
        TJ.flash(d.message, true);
      },
    });
    showText("yaml");
    setInterval(() => {
      for (const td of document.querySelectorAll("#events td[data-created]")) td.textContent = TJ.age(td.dataset.created);
    }, 5000);
  });
})();
