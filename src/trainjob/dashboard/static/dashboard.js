// trainjob dashboard: what every page shares. Every value from the server is set as text
// (textContent, text nodes) and never parsed as HTML: a job name, a log line or an event message
// cannot inject markup or script. The Content-Security-Policy allows only these files' scripts.
"use strict";

const TJ = (() => {
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = String(v);
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  function fill(el, ...children) {
    // el's children replaced by these (nested arrays flattened; null, undefined, false left out)
    el.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false)
      .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
    return el;
  }

  async function api(path, opts) {
    const o = Object.assign({ headers: {} }, opts || {});
    if (o.method && o.method !== "GET") o.headers["X-Trainjob-Dashboard"] = "1";
    const r = await fetch(path, o);
    const type = r.headers.get("content-type") || "";
    const body = type.includes("json") ? await r.json() : await r.text();
    if (!r.ok) throw new Error((body && body.error) || String(body) || r.statusText);
    return body;
  }

  function jobHref(ns, name) {
    return "/jobs/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name);
  }

  function sweepHref(ns, name) {
    return "/sweeps/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name);
  }

  const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i;
  function number(v, digits) {
    // A metric's value as a person reads it, the one formatter of every value the pages show:
    // the shortest decimal of the value at `digits` significant digits (15 unless told: all a
    // double holds faithfully, so 0.9 and not 0.8999999999999999, 1e-7 and 12.5 as they are);
    // a value that is not a decimal number (nan, "n/a") as it came.
    if (v === null || v === undefined) return "";
    const x = typeof v === "number" ? v : DECIMAL.test(String(v)) ? Number(v) : NaN;
    if (!isFinite(x)) return String(v);
    return String(+x.toPrecision(digits || 15));
  }
  function tick(v) {
    // An axis label: 0.0001 as 1e-4, 12345 as 1.23e+4, the rest as number(v, 4).
    if (v === null || v === undefined) return "";
    const a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(2).replace(/\.?0+e/, "e") : number(v, 4);
  }

  let skew = 0; // server clock minus this browser's, from each answer's "now"
  function setNow(now) {
    const t = Date.parse(now);
    if (!isNaN(t)) skew = t - Date.now();
  }
  function duration(secs) {
    // kubectl's short durations: 45s, 3m12s, 5h3m, 2d4h
    secs = Math.max(0, Math.floor(secs));
    if (secs < 120) return secs + "s";
    if (secs < 3600) return secs < 600 ? Math.floor(secs / 60) + "m" + (secs % 60) + "s" : Math.floor(secs / 60) + "m";
    if (secs < 86400) {
      const hrs = Math.floor(secs / 3600), m = Math.floor((secs % 3600) / 60);
      return secs < 36000 ? hrs + "h" + m + "m" : hrs + "h";
    }
    return Math.floor(secs / 86400) + "d" + Math.floor((secs % 86400) / 3600) + "h";
  }
  function age(ts) {
    const t = Date.parse(ts || "");
    return isNaN(t) ? "" : duration((Date.now() + skew - t) / 1000);
  }
  function eta(secs) {
    return secs === null || secs === undefined ? "" : duration(secs);
  }

  function phaseBadge(phase, reason) {
    return h("span", { class: "phase phase-" + String(phase).toLowerCase(), title: reason || null, "data-phase": phase }, phase);
  }

  function progressBar(pct) {
    if (pct === null || pct === undefined) return h("span", { class: "muted" }, "—");
    return h("span", { class: "bar", title: pct + "%" },
      h("span", { class: "fill", style: "width:" + Math.max(0, Math.min(100, pct)) + "%" }),
      h("span", { class: "pct" }, pct + "%"));
  }

  function table(headers, rows, attrs) {
    return h("table", attrs || {},
      h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
      h("tbody", {}, rows));
  }

  function confirm(title, text, action) {
    // A modal that resolves true only when the user presses the action button.
    const d = document.getElementById("confirm");
    document.getElementById("confirm-title").textContent = title;
    document.getElementById("confirm-text").textContent = text;
    const ok = document.getElementById("confirm-ok");
    const cancel = document.getElementById("confirm-cancel");
    ok.textContent = action;
    return new Promise((resolve) => {
      const done = (v) => () => { ok.onclick = cancel.onclick = d.oncancel = null; d.close(); resolve(v); };
      ok.onclick = done(true);
      cancel.onclick = done(false);
      d.oncancel = done(false);
      d.showModal();
    });
  }

  function flash(text, bad) {
    const el = h("div", { class: "flash" + (bad ? " bad" : ""), role: "status" }, text);
    document.body.append(el);
    setTimeout(() => el.remove(), bad ? 8000 : 3000);
  }

  function live(ok) {
    const el = document.getElementById("live");
    if (el) { el.className = ok ? "live on" : "live off"; el.title = ok ? "live updates" : "reconnecting…"; }
  }

  function stream(path, handlers) {
    // An EventSource whose named events go to handlers; "live" shows whether it is connected.
    const es = new EventSource(path);
    es.onopen = () => live(true);
    es.onerror = () => live(false);
    for (const [name, fn] of Object.entries(handlers)) {
      es.addEventListener(name, (e) => fn(JSON.parse(e.data), es));
    }
    return es;
  }

  function setBackend(b) {
    const el = document.getElementById("backend");
    if (el && b) el.textContent = b + " backend";
  }

  document.addEventListener("DOMContentLoaded", () => {
    const page = document.body.dataset.page;
    for (const a of document.querySelectorAll("[data-nav]")) {
      if (a.dataset.nav === page || ((page === "job" || page === "sweep") && a.dataset.nav === "jobs")) a.classList.add("here");
    }
  });

  return { h, fill, api, jobHref, sweepHref, number, tick, setNow, age, eta, duration, phaseBadge, progressBar, table, confirm, flash, live, stream, setBackend };
})();
