// The Runtimes page: every runtime with its ML policy and steps; its YAML, and the Plan a
// TrainJob that names it (with a number of nodes) would get.
"use strict";

(() => {
  const { h } = TJ;

  function path(r, what) {
    const q = new URLSearchParams();
    if (r.namespace) q.set("namespace", r.namespace);
    const nodes = document.getElementById("plan-nodes").value;
    if (what === "plan" && nodes) q.set("numNodes", nodes);
    return "/api/runtimes/" + encodeURIComponent(r.kind) + "/" + encodeURIComponent(r.name) + "/" + what + (q.toString() ? "?" + q : "");
  }

  async function show(r, what) {
    const pre = document.getElementById("runtime-text");
    document.getElementById("runtime-title").textContent = (what === "plan" ? "Plan of a TrainJob on " : "") + r.kind + " " + r.name;
    pre.textContent = "Loading…";
    try {
      pre.textContent = await TJ.api(path(r, what));
    } catch (e) {
      pre.textContent = String(e.message || e);
    }
  }

  function policy(p) {
    const fw = Object.keys(p).filter((k) => k !== "numNodes");
    return fw.map((k) => k + (p[k] && Object.keys(p[k]).length ? " " + JSON.stringify(p[k]) : "")).join("; ");
  }

  document.addEventListener("DOMContentLoaded", async () => {
    const main = document.getElementById("main");
    let data;
    try {
      data = await TJ.api("/api/runtimes");
    } catch (e) {
      TJ.fill(main, h("p", { class: "flash bad" }, String(e.message || e)));
      return;
    }
    const rows = data.runtimes.map((r) => h("tr", { "data-runtime": r.name },
      h("td", {}, r.name), h("td", {}, r.kind), h("td", {}, r.namespace), h("td", {}, r.framework),
      h("td", { class: "num" }, r.nodes), h("td", { class: "msg" }, policy(r.mlPolicy)),
      h("td", {}, r.steps.map((s) => s.name + (s.replicas > 1 ? " ×" + s.replicas : "")).join(", ")),
      h("td", {}, h("button", { type: "button", class: "link", onclick: () => show(r, "yaml") }, "YAML"), " ",
        h("button", { type: "button", class: "link", "data-plan": r.name, onclick: () => show(r, "plan") }, "Plan"))));
    TJ.fill(main, 
      h("h1", {}, "Runtimes"),
      TJ.table(["Name", "Kind", "Namespace", "Framework", "Nodes", "ML policy", "Steps", ""], rows, { class: "runtimes" }),
      h("section", { class: "card" },
        h("h2", { id: "runtime-title" }, "Choose a runtime's YAML or Plan"),
        h("label", {}, "numNodes for the Plan ", h("input", { type: "number", id: "plan-nodes", min: 1, max: 999, placeholder: "runtime's" })),
        h("pre", { class: "yaml", id: "runtime-text" })));
  });
})();
