// The run page: draws the JSON document in #run-data. Every text goes in through textContent
// (never as markup), so what a run's tools or models returned cannot script the page.
"use strict";
(function () {
  const doc = JSON.parse(document.getElementById("run-data").textContent);
  const run = doc.run;
  const steps = doc.steps;
  const byId = new Map(steps.map((s) => [s.id, s]));
  const rows = new Map();
  const depthOf = new Map();
  const SHORT = 600;
  const KIND_COLOURS = {
    run: "#394b59", agent_call: "#5c7cfa", generate: "#7950f2", approval: "#f59f00",
    tool_call: "#2b8a3e", tool_result: "#66a80f", file: "#868e96", episode: "#1098ad",
    experience: "#d6336c",
  };
  const LINK_COLOURS = { causal: "#c92a2a", temporal: "#1971c2", dependency: "#e8590c", reference: "#868e96" };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function svg(tag, attrs) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    return node;
  }
  function text(value) {
    if (value === undefined) return "";
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }
  function ms(value) {
    if (value === null || value === undefined) return "–";
    if (value < 1) return value > 0 ? "<1 ms" : "0 ms";
    if (value < 1000) return Math.round(value) + " ms";
    return (value / 1000).toFixed(value < 10000 ? 2 : 1) + " s";
  }
  function usd(value) {
    if (value === null || value === undefined) return null;
    return "$" + (value < 0.01 ? value.toPrecision(2) : value.toFixed(4));
  }
  // A budget as written: `200` characters, `2k` thousands.
  function budget(value) {
    if (!value) return "–";
    return value.unit ? `${value.amount}${value.unit}` : `${value.amount} chars`;
  }
  function tokens(usage) {
    if (!usage) return null;
    return `${usage.input_tokens || 0} in / ${usage.output_tokens || 0} out`;
  }
  // A long text shows its start and a button for the rest.
  function expandable(value, cls) {
    const full = text(value);
    const pre = el("pre", { class: cls }, full.length > SHORT ? full.slice(0, SHORT) + "…" : full);
    if (full.length <= SHORT) return pre;
    const more = el("button", { class: "more", type: "button", text: `show all (${full.length} characters)` });
    more.addEventListener("click", () => {
      const open = more.dataset.open === "1";
      pre.textContent = open ? full.slice(0, SHORT) + "…" : full;
      more.textContent = open ? `show all (${full.length} characters)` : "show less";
      more.dataset.open = open ? "0" : "1";
    });
    return el("div", { class: "expandable" }, pre, more);
  }
  function table(pairs, cls) {
    const body = el("tbody");
    for (const [key, value] of pairs) {
      if (value === null || value === undefined || value === "") continue;
      body.append(el("tr", {}, el("th", { text: key }), el("td", {}, value instanceof Node ? value : String(value))));
    }
    return el("table", { class: cls }, body);
  }
  function section(title, cls, ...content) {
    return el("section", { class: cls }, el("h4", { text: title }), ...content);
  }

  // ------------------------------------------------------------------ header
  document.getElementById("run-id").textContent = "Run " + run.id;
  const status = document.getElementById("run-status");
  status.textContent = run.status;
  status.classList.add(run.status);
  const summary = document.getElementById("run-summary");
  const facts = [
    ["program", (run.program || "–") + (run.entry ? " " + run.entry : "")],
    ["started", run.started_at],
    ["duration", ms(run.duration_ms)],
    ["events", run.events],
    ["tokens", tokens(run.usage)],
    ["cost", usd(run.cost_usd)],
  ];
  for (const [key, value] of facts) {
    if (value === null || value === undefined) continue;
    summary.append(el("div", {}, el("dt", { text: key }), el("dd", { text: String(value) })));
  }
  if (run.error) {
    const error = document.getElementById("run-error");
    error.textContent = run.error;
    error.hidden = false;
  }
  if (doc.links.length) {
    const nav = document.getElementById("links");
    for (const link of doc.links) nav.append(el("a", { href: link.href, class: "run-link", text: link.run }));
    nav.hidden = false;
  }

  // ------------------------------------------------------------------ timeline
  const end = Math.max(1, run.duration_ms || 0, ...steps.map((s) => s.start_ms + s.duration_ms));
  const timeline = document.getElementById("timeline");
  const fragment = document.createDocumentFragment();
  const kinds = new Set();
  const agents = new Set();
  for (const step of steps) {
    const depth = step.parent !== null && depthOf.has(step.parent) ? depthOf.get(step.parent) + 1 : 0;
    depthOf.set(step.id, depth);
    kinds.add(step.kind);
    if (step.agent) agents.add(step.agent);
    if (step.kind === "agent" && step.data.agent) agents.add(step.data.agent);
    const left = Math.max(0, Math.min(100, (step.start_ms / end) * 100));
    const width = Math.max(0, Math.min(100 - left, (step.duration_ms / end) * 100));
    const title = step.title.replace(/^- /, "");
    const row = el("div", {
      class: "step" + (step.ok ? "" : " failed"),
      role: "treeitem",
      "data-id": step.id,
      "data-kind": step.kind,
      "data-depth": depth,
      title: title,
    },
      el("span", { class: "name", style: `padding-left:${depth * 14}px` },
        el("span", { class: "toggle", text: step.children.length ? "▾" : "" }),
        el("span", { class: "kind kind-" + step.kind, text: step.kind.replace("_", " ") }),
        el("span", { class: "title", text: title.replace(/^[a-z_]+ /, "") || title }),
        step.ok ? null : el("span", { class: "status", text: "✗" })),
      el("span", { class: "bar" }, el("span", { style: `left:${left}%;width:${width}%` })),
      el("span", { class: "duration", text: step.duration_ms ? ms(step.duration_ms) : "" }));
    rows.set(step.id, row);
    fragment.append(row);
  }
  timeline.append(fragment);
  timeline.addEventListener("click", (event) => {
    const row = event.target.closest(".step");
    if (!row) return;
    const step = byId.get(Number(row.dataset.id));
    if (event.target.classList.contains("toggle") && step.children.length) {
      collapse(step, row.dataset.collapsed !== "1");
      return;
    }
    select(step.id, false);
  });

  const collapsed = new Set();
  function collapse(step, shut) {
    const row = rows.get(step.id);
    row.dataset.collapsed = shut ? "1" : "0";
    row.querySelector(".toggle").textContent = shut ? "▸" : "▾";
    if (shut) collapsed.add(step.id); else collapsed.delete(step.id);
    applyFilter();
  }
  function hiddenByCollapse(step) {
    for (let parent = step.parent; parent !== null && byId.has(parent); parent = byId.get(parent).parent) {
      if (collapsed.has(parent)) return true;
    }
    return false;
  }

  // ------------------------------------------------------------------ search and filter
  const search = document.getElementById("search");
  const kindSelect = document.getElementById("kind");
  const agentSelect = document.getElementById("agent");
  const failedOnly = document.getElementById("failed");
  for (const kind of [...kinds].sort()) kindSelect.append(el("option", { value: kind, text: kind }));
  for (const agent of [...agents].sort()) agentSelect.append(el("option", { value: agent, text: agent }));
  function agentOf(step) {
    return step.kind === "agent" ? step.data.agent : step.agent;
  }
  // What a search looks through, built at the first search (most openings never search).
  function searchText(step) {
    if (step.search === undefined) {
      step.search = (step.title + " " + (step.agent || "") + " " + JSON.stringify(step.data)).toLowerCase();
    }
    return step.search;
  }
  function applyFilter() {
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    const kind = kindSelect.value;
    const agent = agentSelect.value;
    const failed = failedOnly.checked;
    const filtering = words.length || kind || agent || failed;
    let shown = 0;
    for (const step of steps) {
      const match = filtering
        ? (!kind || step.kind === kind) && (!agent || agentOf(step) === agent) &&
          (!failed || !step.ok) && words.every((word) => searchText(step).includes(word))
        : !hiddenByCollapse(step);
      rows.get(step.id).hidden = !match;
      if (match) shown += 1;
    }
    document.getElementById("count").textContent = `${shown} of ${steps.length} steps`;
  }
  let pending = 0;
  search.addEventListener("input", () => { clearTimeout(pending); pending = setTimeout(applyFilter, 120); });
  for (const control of [kindSelect, agentSelect, failedOnly]) control.addEventListener("change", applyFilter);
  applyFilter();

  // ------------------------------------------------------------------ details
  const details = document.getElementById("details");
  let selected = null;
  function jump(id, label) {
    return el("span", { class: "jump", "data-step": id, text: label, onclick: () => select(id, true) });
  }
  function select(id, scroll) {
    const step = byId.get(id);
    if (!step) return;
    if (selected !== null && rows.has(selected)) rows.get(selected).classList.remove("selected");
    selected = id;
    const row = rows.get(id);
    row.hidden = false;
    row.classList.add("selected");
    if (scroll) row.scrollIntoView({ block: "center" });
    markSelected(id);
    if (scroll) showInGraph(id);
    details.replaceChildren(...describe(step));
    if (scroll) details.scrollTop = 0;
  }
  function describe(step) {
    const data = step.data;
    const head = el("h2", { "data-kind": step.kind }, el("span", { class: "kind kind-" + step.kind + " badge", text: step.kind }),
      " ", step.title.replace(/^- /, ""));
    const timing = table([
      ["status", step.ok ? "ok" : "failed"],
      ["started", "+" + ms(step.start_ms)],
      ["duration", step.duration_ms ? ms(step.duration_ms) : null],
      ["agent", step.agent],
    ], "timing");
    const parts = [head, timing];
    const kindParts = (DESCRIBERS[step.kind] || describeOther)(step, data);
    parts.push(...kindParts);
    if (step.parent !== null && byId.has(step.parent)) {
      parts.push(section("Within", "within", jump(step.parent, byId.get(step.parent).title.replace(/^- /, ""))));
    }
    if (step.children.length) {
      const list = el("ul", { class: "children" });
      for (const child of step.children.slice(0, 200)) list.append(el("li", {}, jump(child, byId.get(child).title.replace(/^- /, ""))));
      parts.push(section(`Steps inside (${step.children.length})`, "inside", list));
    }
    return parts;
  }
  function describeGenerate(step, data) {
    const context = data.context || {};
    const parts = [table([
      ["model", data.model || (context.model && context.model.uri)],
      ["answered by", data.response_model],
      ["finish", data.finish_reasons && data.finish_reasons.join(", ")],
      ["tokens", tokens(data.usage)],
      ["prompt estimate", promptEstimate(data.promptTokens)],
      ["latency", data.duration_ms !== undefined ? ms(data.duration_ms) : null],
      ["cost", usd(data.cost_usd)],
      ["attempts", data.attempts],
      ["output budget", data.budget ? budget(data.budget) : null],
    ], "generate-facts")];
    if (context.system !== undefined) parts.push(section("System", "generate-system", expandable(context.system)));
    const items = context.context || [];
    const body = el("tbody");
    for (const item of items) {
      body.append(el("tr", { class: "context-item" },
        el("td", { text: String(item.index) }),
        el("td", {}, el("div", { text: item.source || "" }), item.label ? el("span", { class: "chip", text: "label " + item.label }) : null),
        el("td", { text: budget(item.budget) }),
        el("td", {}, el("span", { class: "chip" + (item.clipped ? " clipped" : ""), text: item.clipped ? "clipped" : "whole" })),
        el("td", { class: "sizes", text: item.clipped ? `${item.originalSize} → ${item.clippedSize}` : String(item.originalSize) }),
        el("td", {}, expandable(item.text))));
    }
    const head = el("tr", {}, ...["#", "source", "budget", "", "size", "text"].map((h) => el("th", { text: h })));
    parts.push(section(`Context (${items.length} items)`, "generate-context",
      items.length ? el("table", {}, el("thead", {}, head), body) : el("p", { text: "no context items" })));
    parts.push(section("Instruction", "generate-instruction", expandable(data.instruction)));
    if (data.ok === false) parts.push(section("Failed", "generate-error", expandable(data.error)));
    else parts.push(section("Answer", "generate-answer", expandable(data.result)));
    const errors = data.errors || [];
    if (errors.length) {
      const list = el("div", { class: "repairs" });
      errors.forEach((error, index) => {
        list.append(el("div", { class: "repair" }, el("strong", { text: `attempt ${index + 1}/${data.attempts} failed: ` }), error));
      });
      if (data.ok !== false) list.append(el("div", { class: "repair ok", text: `attempt ${data.attempts}/${data.attempts} ok` }));
      parts.push(section("Repair attempts", "generate-repairs", list));
    }
    if (context.finalUserMessage !== undefined) parts.push(section("Final user message", "generate-message", expandable(context.finalUserMessage)));
    return parts;
  }
  // The trace's estimate of the prompt's tokens by part (system, context, instruction, schema).
  function promptEstimate(parts) {
    if (!parts || parts.total === undefined) return null;
    const context = (parts.context || []).reduce((sum, item) => sum + (item.tokens || 0), 0);
    return `≈${parts.total} tokens: system ${parts.system || 0}, context ${context}, ` +
      `instruction ${parts.instruction || 0}, schema ${parts.schema || 0}`;
  }
  function approvalsFor(step) {
    const found = [];
    const siblings = step.parent !== null && byId.has(step.parent) ? byId.get(step.parent).children.map((id) => byId.get(id)) : steps.filter((s) => s.parent === null);
    for (const other of siblings) {
      if (other.id === step.id) break;
      if (other.kind === "tool" && other.data.tool === step.data.tool && other.data.method === step.data.method) found.length = 0;
      if (other.kind === "approval" && other.data.tool === step.data.tool && other.data.method === step.data.method) found.push(other);
    }
    return found;
  }
  function describeTool(step, data) {
    const parts = [table([["tool", `${data.tool}.${data.method}`], ["uri", data.uri], ["scheme", data.scheme]], "tool-facts")];
    parts.push(section("Arguments", "tool-args", expandable(data.args)));
    parts.push(section(data.error ? "Error" : "Result", "tool-result", expandable(data.error || data.result)));
    const effects = data.effects || [];
    if (effects.length) {
      const list = el("ul");
      for (const effect of effects) list.append(el("li", { class: "effect" }, expandable(effect)));
      parts.push(section(`Effects (${effects.length})`, "tool-effects", list));
    }
    const approvals = approvalsFor(step);
    if (approvals.length) {
      const list = el("ul");
      for (const approval of approvals) {
        list.append(el("li", { class: "approval" }, jump(approval.id, approval.data.decision),
          approval.data.by ? ` by ${approval.data.by}` : "", approval.data.risk ? ` (risk ${approval.data.risk})` : ""));
      }
      parts.push(section("Approval", "tool-approvals", list));
    }
    return parts;
  }
  function describeApproval(step, data) {
    return [table([["tool", `${data.tool}.${data.method}`], ["uri", data.uri], ["decision", data.decision],
      ["decided by", data.by], ["risk", data.risk], ["mode", data.mode], ["approval id", data.approval_id]], "approval-facts")];
  }
  function describeMemory(step, data) {
    return [table([["memory", data.memory], ["operation", data.operation], ["uri", data.uri], ["count", data.count], ["id", data.id]], "memory-facts"),
      section("Arguments", "memory-args", expandable(data.args)),
      section("Result", "memory-result", expandable(data.result))];
  }
  function describeAgent(step, data) {
    const parts = [table([["call", `${data.agent}.${data.function}`]], "agent-facts"), section("Arguments", "agent-args", expandable(data.args))];
    if (data.error) parts.push(section("Error", "agent-error", expandable(data.error)));
    else if (data.unfinished) parts.push(el("p", { class: "unfinished", text: "The call never returned (the run was stopped)." }));
    else parts.push(section("Result", "agent-result", expandable(data.result)));
    return parts;
  }
  function describeOther(step, data) {
    return [section("Data", "other-data", expandable(data))];
  }
  const DESCRIBERS = { generate: describeGenerate, tool: describeTool, approval: describeApproval, memory: describeMemory, agent: describeAgent };

  // ------------------------------------------------------------------ task graph
  // Only the nodes in view (and a margin) are in the SVG, redrawn when the view moves, so a
  // graph of thousands of nodes costs what a screenful does.
  const graph = doc.graph;
  const canvas = document.getElementById("graph");
  const frame = document.getElementById("graph-frame");
  const graphNodes = new Map();
  const view = { x: 0, y: 0, k: 1 };
  const BOX_W = 180, BOX_H = 22, MARGIN = 200;
  const positions = new Map(graph.nodes.map((n) => [n.id, n]));
  const nodeOfStep = new Map(graph.nodes.filter((n) => n.step !== null).map((n) => [n.step, n]));
  const parentOf = new Map();
  for (const [source, target] of graph.tree) {
    if (!parentOf.has(target)) parentOf.set(target, source);
  }
  const layer = svg("g", { id: "graph-layer" });
  const treePath = svg("path", { class: "tree" });
  const linkLayer = svg("g"), nodeLayer = svg("g");
  layer.append(treePath, linkLayer, nodeLayer);
  canvas.append(layer);
  let drawPending = false;

  function nodeElement(node) {
    const group = svg("g", { class: "node node-" + node.type, transform: `translate(${node.x},${node.y})`, "data-id": node.id });
    if (node.step !== null) group.dataset.step = node.step;
    const title = svg("title", {});
    title.textContent = node.label;
    const label = svg("text", { x: 6, y: 15 });
    label.textContent = node.short;
    group.append(title, svg("rect", { width: BOX_W, height: BOX_H, fill: KIND_COLOURS[node.type] || "#888" }), label);
    if (node.step !== null && node.step === selected) group.classList.add("selected");
    return group;
  }
  function visibleBox() {
    const width = frame.clientWidth || 800, height = frame.clientHeight || 460;
    return {
      left: (-view.x - MARGIN) / view.k, top: (-view.y - MARGIN) / view.k,
      right: (width - view.x + MARGIN) / view.k, bottom: (height - view.y + MARGIN) / view.k,
    };
  }
  function inside(node, box) {
    return node.x + BOX_W >= box.left && node.x <= box.right && node.y + BOX_H >= box.top && node.y <= box.bottom;
  }
  function drawGraph() {
    drawPending = false;
    const box = visibleBox();
    const shown = new Set();
    for (const node of graph.nodes) if (inside(node, box)) shown.add(node.id);
    for (const [id, group] of graphNodes) {
      if (!shown.has(id)) { group.remove(); graphNodes.delete(id); }
    }
    const fragment = document.createDocumentFragment();
    for (const id of shown) {
      if (!graphNodes.has(id)) {
        const group = nodeElement(positions.get(id));
        graphNodes.set(id, group);
        fragment.append(group);
      }
    }
    nodeLayer.append(fragment);
    let path = "";
    for (const id of shown) {
      const parent = parentOf.get(id);
      const a = parent && positions.get(parent), b = positions.get(id);
      if (!a) continue;
      const x1 = a.x + BOX_W, y1 = a.y + BOX_H / 2, x2 = b.x, y2 = b.y + BOX_H / 2, mid = (x1 + x2) / 2;
      path += `M${x1},${y1}C${mid},${y1} ${mid},${y2} ${x2},${y2}`;
    }
    treePath.setAttribute("d", path);
    const links = document.createDocumentFragment();
    for (const link of graph.links) {
      if (!shown.has(link.source) && !shown.has(link.target)) continue;
      const a = positions.get(link.source), b = positions.get(link.target);
      if (!a || !b) continue;
      const x1 = a.x + BOX_W, y1 = a.y + BOX_H / 2, x2 = b.x + BOX_W, y2 = b.y + BOX_H / 2;
      const bend = Math.max(x1, x2) + 30 + Math.min(120, Math.abs(y2 - y1) / 6);
      links.append(svg("path", { class: "link link-" + link.type, d: `M${x1},${y1}C${bend},${y1} ${bend},${y2} ${x2},${y2}`, stroke: LINK_COLOURS[link.type] || "#888" }));
    }
    linkLayer.replaceChildren(links);
    if (runPage.graphAt === null) {
      runPage.graphAt = performance.now();
      document.body.dataset.graph = "1";
    }
  }
  function redraw() {
    if (!drawPending) { drawPending = true; requestAnimationFrame(drawGraph); }
  }
  function markSelected(id) {
    for (const group of graphNodes.values()) group.classList.toggle("selected", Number(group.dataset.step) === id);
  }
  // Bring a step's node into view (the timeline and the graph point at each other).
  function showInGraph(id) {
    const node = nodeOfStep.get(id);
    if (!node || !frame.clientWidth) return;
    const box = visibleBox();
    if (inside(node, { left: box.left + MARGIN / view.k, top: box.top + MARGIN / view.k, right: box.right - MARGIN / view.k, bottom: box.bottom - MARGIN / view.k })) return;
    view.x = frame.clientWidth / 2 - (node.x + BOX_W / 2) * view.k;
    view.y = frame.clientHeight / 2 - (node.y + BOX_H / 2) * view.k;
    apply();
  }
  layer.addEventListener("click", (event) => {
    const group = event.target.closest(".node");
    if (group && group.dataset.step !== undefined) select(Number(group.dataset.step), true);
  });
  const legend = document.getElementById("graph-legend");
  for (const type of [...new Set(graph.nodes.map((n) => n.type))]) {
    const swatch = el("i");
    swatch.style.background = KIND_COLOURS[type] || "#888";
    legend.append(el("span", {}, swatch, type.replace("_", " ")));
  }
  document.getElementById("show-links").addEventListener("change", (event) => canvas.classList.toggle("no-links", !event.target.checked));

  // Zoom and pan move one transform: wheel zooms at the pointer, dragging pans.
  function apply() {
    layer.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
    redraw();
  }
  // The whole graph when it fits readably, else its start at a readable size.
  function fit() {
    const width = frame.clientWidth || 800, height = frame.clientHeight || 460;
    const k = Math.min(1, width / (graph.width + BOX_W), height / graph.height);
    view.k = Math.max(k, 0.5);
    view.x = 0;
    view.y = 0;
    apply();
  }
  function zoomAt(factor, cx, cy) {
    const k = Math.min(4, Math.max(0.05, view.k * factor));
    view.x = cx - ((cx - view.x) * k) / view.k;
    view.y = cy - ((cy - view.y) * k) / view.k;
    view.k = k;
    apply();
  }
  frame.addEventListener("wheel", (event) => {
    event.preventDefault();
    const box = frame.getBoundingClientRect();
    zoomAt(event.deltaY < 0 ? 1.15 : 1 / 1.15, event.clientX - box.left, event.clientY - box.top);
  }, { passive: false });
  let drag = null;
  frame.addEventListener("pointerdown", (event) => {
    if (event.target.closest(".node")) return;
    drag = { x: event.clientX - view.x, y: event.clientY - view.y };
    frame.classList.add("dragging");
  });
  window.addEventListener("pointermove", (event) => {
    if (!drag) return;
    view.x = event.clientX - drag.x;
    view.y = event.clientY - drag.y;
    apply();
  });
  window.addEventListener("pointerup", () => { drag = null; frame.classList.remove("dragging"); });
  document.getElementById("zoom-in").addEventListener("click", () => zoomAt(1.3, frame.clientWidth / 2, frame.clientHeight / 2));
  document.getElementById("zoom-out").addEventListener("click", () => zoomAt(1 / 1.3, frame.clientWidth / 2, frame.clientHeight / 2));
  document.getElementById("zoom-reset").addEventListener("click", fit);

  // ------------------------------------------------------------------ experiences
  function fill(list, items, render) {
    const target = document.getElementById(list);
    if (!items.length) target.append(el("li", { class: "empty", text: "none" }));
    for (const item of items) target.append(render(item));
  }
  fill("experiences-recalled", doc.experiences.recalled, (item) =>
    el("li", { class: "recalled" }, item.title || item.key || "experience", " — ", jump(item.step, "step")));
  fill("experiences-learned", doc.experiences.learned, (item) =>
    el("li", { class: "learned" }, el("strong", { text: item.title || item.key }),
      item.action ? ` (${item.action}${item.status ? ", " + item.status : ""})` : "",
      item.lesson ? el("div", { text: item.lesson }) : null));

  // Open on the first root cause (a failed step with no failed step inside), or the first step.
  const firstFailed = steps.find((s) => !s.ok && !s.children.some((c) => !byId.get(c).ok));
  if (steps.length) select((firstFailed || steps[0]).id, Boolean(firstFailed));
  const runPage = { select, applyFilter, view, ready: true, readyAt: performance.now(), paintedAt: null, graphAt: null };
  window.runPage = runPage;
  document.body.dataset.ready = "1";
  // The graph is placed once the first frame is painted (its size is known by then).
  requestAnimationFrame(() => requestAnimationFrame(() => {
    runPage.paintedAt = performance.now();
    fit();
  }));
})();
