// A sweep's page (an OptimizationJob, /api/sweeps/NS/NAME, read again every 2 s until it ends):
// its search and result, the trials (each linking to its TrainJob's page; sortable by the
// objective, best first for its direction; the best marked), each parameter against the
// objective as a small scatter plot (SVG drawn here: no library), conditions and events.
"use strict";

(() => {
  const { h } = TJ;
  const parts = location.pathname.split("/").map(decodeURIComponent); // ["", "sweeps", ns, name]
  const ns = parts[2], name = parts[3];
  const base = "/api/sweeps/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name);
  let sweep = null, sections = {};
  let sort = { by: "index", best: true }; // "index" or "objective"; best first or worst first

  function kv(pairs) {
    return h("dl", { class: "kv" }, pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  }

  // -- trials ---------------------------------------------------------------------------------

  function ordered(trials, s) {
    // Trials by index, or by the objective (best first for the direction, or worst first);
    // trials without an objective last either way, by index.
    const sign = s.direction === "Maximize" ? -1 : 1;
    const out = trials.slice();
    if (sort.by !== "objective") return out.sort((a, b) => a.index - b.index);
    return out.sort((a, b) => {
      const x = a.objectiveValue, y = b.objectiveValue;
      if (x === null || y === null) return (x === null) - (y === null) || a.index - b.index;
      return (sort.best ? sign : -sign) * (x - y) || a.index - b.index;
    });
  }

  function sortBy(by) {
    sort = sort.by === by && by === "objective" ? { by, best: !sort.best } : { by, best: true };
    if (sweep) renderTrials(sweep);
  }

  function renderTrials(s) {
    const params = s.parameters.map((p) => p.name);
    const arrow = sort.by === "objective" ? (sort.best ? " ↓ best first" : " ↑ worst first") : "";
    const head = h("tr", {},
      h("th", {}, h("button", { type: "button", class: "link sort", id: "sort-index", onclick: () => sortBy("index") }, "#")),
      h("th", {}, "Trial"), h("th", {}, "Phase"),
      params.map((p) => h("th", { class: "param" }, p)),
      h("th", { "aria-sort": sort.by === "objective" ? (sort.best === (s.direction !== "Maximize") ? "ascending" : "descending") : null },
        h("button", { type: "button", class: "link sort", id: "sort-objective", title: "sort by " + s.metric + ", best first, then worst first", onclick: () => sortBy("objective") }, s.metric + arrow)),
      h("th", {}, "Reason"));
    const rows = ordered(s.trialList, s).map((t) => h("tr", { "data-trial": t.name, "data-best": t.best ? "true" : null, class: t.best ? "best" : "" },
      h("td", { class: "num" }, t.index),
      h("td", { class: "name" }, h("a", { href: TJ.jobHref(s.namespace, t.name) }, t.name), t.best ? [" ", h("span", { class: "best-mark", title: "the best trial: " + s.metric + " " + (s.direction === "Maximize" ? "highest" : "lowest") }, "★ best")] : null),
      h("td", {}, TJ.phaseBadge(t.phase, t.reason)),
      params.map((p) => h("td", { class: "num param", "data-param": p, title: t.parameters[p] }, TJ.number(t.parameters[p]))),
      h("td", { class: "num objective", title: t.objective }, t.objective === null ? "" : TJ.number(t.objective)),
      h("td", { class: "msg" }, t.reason)));
    TJ.fill(sections.trials, s.trialList.length
      ? h("table", { class: "trials" }, h("thead", {}, head), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "No trials yet."));
  }

  // -- parameter against objective ------------------------------------------------------------

  const SVG = "http://www.w3.org/2000/svg";
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
    for (const c of children.flat(Infinity)) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return el;
  }

  function ticks(lo, hi, n) {
    // About n round values from lo to hi (1, 2 or 5 times a power of ten apart).
    if (hi === lo) return [lo];
    const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((x) => x >= raw);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
    return out;
  }

  function scale(values, log) {
    // A numeric axis over values: [lo, hi] padded 5%, ticks; on a log axis, in log10.
    const f = log ? Math.log10 : (x) => x;
    const vs = values.map(f);
    let lo = Math.min(...vs), hi = Math.max(...vs);
    if (lo === hi) { lo -= Math.abs(lo) * 0.1 || 1; hi += Math.abs(hi) * 0.1 || 1; }
    const pad = (hi - lo) * 0.05;
    lo -= pad; hi += pad;
    const marks = log
      ? ticks(Math.ceil(lo), Math.floor(hi), 4).filter((t) => Number.isInteger(t)).map((t) => ({ at: t, label: TJ.tick(Math.pow(10, t)) }))
      : ticks(lo, hi, 4).map((t) => ({ at: t, label: TJ.tick(t) }));
    return { lo, hi, f, marks: marks.length ? marks : [{ at: (lo + hi) / 2, label: TJ.tick(log ? Math.pow(10, (lo + hi) / 2) : (lo + hi) / 2) }] };
  }

  function plot(sw, p) {
    // One parameter (x) against the objective (y): a dot per trial with an objective, linking
    // to its page; the best one larger and marked. Categorical parameters: a column each.
    const W = 320, H = 220, L = 58, R = 12, T = 10, B = 36;
    const pts = sw.trialList.filter((t) => t.objectiveValue !== null && t.parameters[p.name] !== undefined);
    const fig = h("figure", { class: "scatter", "data-param": p.name, "data-points": String(pts.length) },
      h("figcaption", {}, p.name + " against " + sw.metric + " ", h("span", { class: "muted" }, "(" + (sw.direction === "Maximize" ? "higher" : "lower") + " is better)")));
    if (!pts.length) { fig.append(h("p", { class: "muted" }, "No trial has reported " + sw.metric + " yet.")); return fig; }
    const categorical = p.kind === "categorical" || pts.some((t) => !isFinite(Number(t.parameters[p.name])));
    let xOf, xMarks;
    if (categorical) {
      const cats = (p.choices && p.choices.length ? p.choices : [...new Set(pts.map((t) => t.parameters[p.name]))]);
      const at = (v) => L + (W - L - R) * (cats.indexOf(v) + 0.5) / cats.length;
      xOf = (t) => at(t.parameters[p.name]);
      xMarks = cats.map((c) => ({ x: at(c), label: c }));
    } else {
      const xs = scale(pts.map((t) => Number(t.parameters[p.name])), p.kind === "logUniform" && pts.every((t) => Number(t.parameters[p.name]) > 0));
      const px = (v) => L + (W - L - R) * (v - xs.lo) / (xs.hi - xs.lo);
      xOf = (t) => px(xs.f(Number(t.parameters[p.name])));
      xMarks = xs.marks.map((m) => ({ x: px(m.at), label: m.label }));
    }
    const ys = scale(pts.map((t) => t.objectiveValue), false);
    const py = (v) => T + (H - T - B) * (1 - (v - ys.lo) / (ys.hi - ys.lo));
    const svg = s("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": p.name + " against " + sw.metric },
      ys.marks.map((m) => [
        s("line", { x1: L, x2: W - R, y1: py(m.at), y2: py(m.at), class: "grid" }),
        s("text", { x: L - 6, y: py(m.at) + 4, "text-anchor": "end", class: "tick" }, m.label)]),
      xMarks.map((m) => s("text", { x: m.x, y: H - B + 16, "text-anchor": "middle", class: "tick" }, m.label)),
      s("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }),
      s("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }),
      s("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", class: "label" }, p.name + (p.kind === "logUniform" ? " (log)" : "")),
      s("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", class: "label", transform: "rotate(-90 12 " + (T + H - B) / 2 + ")" }, sw.metric),
      pts.filter((t) => !t.best).concat(pts.filter((t) => t.best)).map((t) =>
        s("a", { href: TJ.jobHref(sw.namespace, t.name), "data-trial": t.name },
          s("circle", { cx: xOf(t).toFixed(1), cy: py(t.objectiveValue).toFixed(1), r: t.best ? 6 : 4, class: t.best ? "dot best" : "dot", "data-best": t.best ? "true" : null },
            s("title", {}, t.name + ": " + p.name + "=" + TJ.number(t.parameters[p.name]) + ", " + sw.metric + "=" + TJ.number(t.objective))))));
    fig.append(svg);
    return fig;
  }

  // -- the page -------------------------------------------------------------------------------

  function render(sw) {
    sweep = sw;
    document.title = sw.name + " · sweep · trainjob";
    TJ.fill(sections.head, h("h1", {}, sw.name, " ", TJ.phaseBadge(sw.phase, sw.reason)));
    const spaces = sw.parameters.map((p) => p.name + ": " + (p.kind === "categorical"
      ? "one of " + p.choices.join(", ")
      : p.kind + " " + p.min + " to " + p.max + (p.type === "Int" ? " (Int)" : "")));
    const es = sw.earlyStopping;
    TJ.fill(sections.summary, kv([
      ["Namespace", sw.namespace],
      ["Objective", sw.metric + " (" + sw.direction + ")"],
      ["Algorithm", sw.algorithm],
      ["Trials", sw.finished + " of " + sw.numTrials + " finished, " + sw.parallelTrials + " at a time"],
      ["Parameters", spaces.join("; ")],
      ["Max failed", sw.maxFailedTrials === null ? "" : sw.maxFailedTrials],
      ["Early stop", es ? "median (after " + es.minTrials + " trials, from step " + es.startStep + ")" : ""],
      ["Created", sw.created],
      ["Age", TJ.age(sw.created)],
    ]));
    const r = sw.result;
    const best = r ? sw.trialList.find((t) => t.name === r.trainJobName) : null;
    TJ.fill(sections.result, r ? kv([
      ["Best trial", h("a", { href: TJ.jobHref(sw.namespace, r.trainJobName), id: "best-link" }, r.trainJobName)],
      [sw.metric, best && best.objective !== null ? h("span", { id: "best-objective", title: best.objective }, TJ.number(best.objective)) : ""],
      ...Object.entries(r.parameters).map(([k, v]) => [k, h("span", { title: v }, TJ.number(v))]),
    ]) : h("p", { class: "muted" }, "No trial has reported " + sw.metric + " yet."));
    renderTrials(sw);
    TJ.fill(sections.plots, sw.parameters.map((p) => plot(sw, p)));
    TJ.fill(sections.conditions, sw.conditions.length ? TJ.table(["Type", "Status", "Reason", "Message", "Last transition"],
      sw.conditions.map((c) => h("tr", {}, h("td", {}, c.type), h("td", {}, c.status), h("td", {}, c.reason), h("td", { class: "msg" }, c.message), h("td", {}, c.time)))) : h("p", { class: "muted" }, "None."));
    TJ.fill(sections.events, sw.events.length ? TJ.table(["Type", "Reason", "Age", "From", "Message"],
      sw.events.map((e) => h("tr", { class: e.type === "Warning" ? "warn" : "" }, h("td", {}, e.type), h("td", {}, e.reason), h("td", { "data-created": e.time }, TJ.age(e.time)), h("td", {}, e.object), h("td", { class: "msg" }, e.message)))) : h("p", { class: "muted" }, "None."));
  }

  function section(id, title) {
    const body = h("div", { id: id });
    sections[id] = body;
    return h("section", { class: "card", id: "section-" + id }, h("h2", {}, title), body);
  }

  let failed = "";
  async function read() {
    // true: nothing more to read (the sweep has finished, or is not there).
    try {
      const d = await TJ.api(base);
      TJ.setNow(d.now);
      TJ.setBackend(d.backend);
      TJ.live(true);
      failed = "";
      render(d.sweep);
      return d.sweep.phase === "Complete" || d.sweep.phase === "Failed";
    } catch (e) {
      const msg = String(e.message || e);
      TJ.live(false);
      if (msg !== failed) TJ.flash("cannot read the sweep: " + msg, true); // once, not every 2 s
      failed = msg;
      if (!/ not found$/.test(msg)) return false; // the backend away: look again
      TJ.fill(sections.head, h("h1", {}, name, " ", h("span", { class: "phase phase-gone", id: "gone" }, "Not found")));
      return true;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    sections.head = h("div", { class: "head", id: "head" }, h("h1", {}, name));
    TJ.fill(document.getElementById("main"),
      h("p", { class: "crumbs" }, h("a", { href: "/" }, "Jobs"), " / ", ns, " / ", name),
      sections.head,
      h("div", { class: "grid" }, section("summary", "Sweep"), section("result", "Result")),
      section("trials", "Trials"),
      section("plots", "Each parameter against the objective"),
      h("div", { class: "grid" }, section("conditions", "Conditions"), section("events", "Events")));
    sections.plots.classList.add("curves");
    const loop = async () => {
      const done = await read();
      if (!done) setTimeout(loop, document.hidden ? 10000 : 2000);
    };
    loop();
  });
})();
