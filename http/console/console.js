// The Troupe admin console: polls the head's JSON API (api/v1/, see the README)
// once a second and draws the cluster; drain and cancel need the admin key.
// Plain ES2020 and SVG, no dependencies, no network beyond the head.
//
// Elements and attributes a test (or a person) can rely on:
//   #summary                     model, route readiness, counts, time of the last poll;
//                                data-route-ready="true|false"
//   #admin-key                   the admin key; kept in sessionStorage ("troupe.adminKey"), sent as
//                                "Authorization: Bearer KEY" with every request when not empty
//   #message                     hidden when empty; else one line per source, each with the
//                                server's own message; a click dismisses a line:
//     [data-source=action]       the last drain or cancel: data-kind="ok|error"
//     [data-source=poll]         why the last poll failed (data-kind="error"); gone once one succeeds
//   #coverage svg                the coverage map: nodes (rows) × layers (columns)
//     [data-layer-replicas=L]    top row, layer L: data-replicas=N, class "gap" when N is 0
//     g[data-node=ID]            one row per node: data-state=ok|draining|trouble|quarantined|stale|lost
//       rect[data-layer=L]       a layer that node serves
//   #nodes tr[data-node=ID]      the node table: data-state=ok|draining|trouble|quarantined|stale|lost, data-role
//     button[data-action=drain]  shards only
//   #jobs tr[data-job=ID]        a job: data-state=queued|running|completed|aborted, data-session,
//                                data-tokens, data-max-tokens, data-route="node,node,...";
//                                class "selected" when selected
//     button[data-action=cancel]
//   #waterfall                   the selected session: data-session=ID, data-ended when it is gone
//     g[data-step=I]             one bar per step (token index I), oldest at the top
//       rect[data-hop=NODE]      data-stage, data-part=queue|compute|send
//       rect[data-hop=network]   the step's time between hops
//   #charts svg[data-series=S]   S = tokens_per_s, queue_depth, cache_bytes, sessions, errors_per_s
"use strict";

const POLL_MS = 1000;
const KEY_STORAGE = "troupe.adminKey";
const SVG_NS = "http://www.w3.org/2000/svg";
const WATERFALL_STEPS = 24;
const CHARTS = [
  ["tokens_per_s", "Tokens/s", (v) => v.toFixed(1)],
  ["queue_depth", "Queue depth", (v) => String(Math.round(v))],
  ["cache_bytes", "KV cache in use", fmtBytes],
  ["sessions", "Sessions", (v) => String(Math.round(v))],
  ["errors_per_s", "Errors/s", (v) => v.toFixed(2)],
];
const HOP_COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#e15759"];

const view = {
  selectedJob: "",      // the job clicked in #jobs
  selectedSession: "",  // its session, once it has one
  timeline: null,       // the last timeline fetched for selectedSession
};

// ------------------------------------------------------------------ API

class ApiError extends Error {}

function adminKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

// One request to the head: the parsed JSON body, or an ApiError whose message
// carries the status and the server's own error message.
async function api(method, path) {
  const headers = {};
  if (adminKey()) headers.Authorization = `Bearer ${adminKey()}`;
  const init = { method, headers, cache: "no-store" };
  if (method === "POST") {
    headers["Content-Type"] = "application/json";
    init.body = "{}";
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(`${method} /${path}: the head does not answer (${e.message})`);
  }
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(`${method} /${path}: ${res.status} ${serverError(body, res.statusText)}`);
  return body;
}

// The text of an OpenAI-style {"error": {"message", "code"}} body.
function serverError(body, fallback) {
  const err = body && body.error;
  if (!err) return fallback;
  if (typeof err === "string") return err;
  return err.code ? `${err.code}: ${err.message}` : err.message;
}

// ------------------------------------------------------------------ polling

async function poll() {
  const names = ["cluster", "nodes", "coverage", "jobs", "metrics/history?seconds=600"];
  const results = await Promise.allSettled(names.map((n) => api("GET", `api/v1/${n}`)));
  const [cluster, nodes, coverage, jobs, history] = results.map((r) => (r.status === "fulfilled" ? r.value : null));
  const failed = results.find((r) => r.status === "rejected");
  if (failed) showMessage("poll", "error", failed.reason.message);
  else clearMessage("poll");

  if (cluster) renderSummary(cluster);
  if (nodes && coverage) renderCoverage(nodes.nodes, coverage);
  if (nodes) renderNodes(nodes.nodes);
  if (jobs) renderJobs(jobs.jobs);
  if (history) renderCharts(history);
  await pollTimeline();
}

// The selected session's timeline; once the session is gone (404) the last
// one fetched stays on screen, marked ended.
async function pollTimeline() {
  const session = view.selectedSession;
  if (!session) return renderWaterfall();
  try {
    const timeline = await api("GET", `api/v1/sessions/${encodeURIComponent(session)}/timeline`);
    if (session !== view.selectedSession) return;  // another was clicked meanwhile
    view.timeline = { ...timeline, ended: false };
  } catch (e) {
    if (view.timeline && view.timeline.session_id === session) view.timeline.ended = true;
  }
  renderWaterfall();
}

async function loop() {
  try {
    await poll();
  } catch (e) {
    showMessage("poll", "error", `console: ${e.message}`);
  }
  setTimeout(loop, POLL_MS);
}

// ------------------------------------------------------------------ actions

async function act(button, path, describe) {
  button.disabled = true;
  try {
    showMessage("action", "ok", describe(await api("POST", path)));
  } catch (e) {
    showMessage("action", "error", e.message);
  } finally {
    button.disabled = false;
  }
}

function drain(button, node) {
  act(button, `api/v1/nodes/${encodeURIComponent(node)}/drain`,
    (r) => r.text || `${r.node}: draining (${r.moved} jobs moved, ${r.staying} staying)`);
}

function cancel(button, job) {
  act(button, `api/v1/jobs/${encodeURIComponent(job)}/cancel`, (r) => `job ${r.job_id}: ${r.state}`);
}

function select(job, session) {
  view.selectedJob = job;
  view.selectedSession = session;
  view.timeline = null;
  document.querySelectorAll("#jobs tr.selected").forEach((tr) => tr.classList.remove("selected"));
  const row = document.querySelector(`#jobs tr[data-job="${CSS.escape(job)}"]`);
  if (row) row.classList.add("selected");
  pollTimeline();
}

// ------------------------------------------------------------------ message area

// Sets the line of `source` ("poll" or "action"); the poll's comes first.
function showMessage(source, kind, text) {
  const box = document.getElementById("message");
  let line = box.querySelector(`[data-source="${source}"]`);
  if (!line) {
    line = el("p", { "data-source": source });
    if (source === "poll") box.prepend(line);
    else box.append(line);
  }
  line.dataset.kind = kind;
  line.textContent = text;
  box.hidden = false;
}

function clearMessage(source) {
  const box = document.getElementById("message");
  const line = box.querySelector(`[data-source="${source}"]`);
  if (line) line.remove();
  box.hidden = box.children.length === 0;
}

// ------------------------------------------------------------------ summary

function renderSummary(c) {
  const box = document.getElementById("summary");
  box.dataset.routeReady = String(c.route_ready);
  box.replaceChildren(
    el("b", {}, c.model),
    ` · ${c.n_layers} layers · `,
    c.route_ready ? el("span", { class: "good" }, "route ready")
      : el("span", { class: "bad" }, `no route: ${c.route_problem || "unknown"}`),
    ` · ${c.nodes} nodes · ${c.sessions} sessions · ${c.queued} queued · up ${fmtAge(c.uptime_s * 1000)}`,
    ` · v${c.version} · ${new Date().toLocaleTimeString()}`);
}

// ------------------------------------------------------------------ coverage map

// Nodes without layers (the head, stage nodes) first, then shards by first layer.
function coverageRows(nodes, spans) {
  const spansOf = (id) => spans.filter((s) => s.node === id);
  const rows = nodes.map((n) => ({ node: n, spans: spansOf(n.id) }));
  const first = (r) => (r.spans.length ? r.spans[0].begin : r.node.layers ? r.node.layers[0] : -1);
  return rows.sort((a, b) => first(a) - first(b) || a.node.id.localeCompare(b.node.id));
}

function renderCoverage(nodes, coverage) {
  const n = coverage.n_layers;
  const cell = 20, label = 110, top = 22, rowH = 20;
  const rows = coverageRows(nodes, coverage.spans);
  const width = label + n * cell + 4, height = top + rows.length * rowH + 18;
  const svg = svgEl("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });

  svg.append(svgEl("text", { x: 4, y: top - 7, class: "axis" }, "replicas"));
  coverage.replicas.forEach((count, layer) => {
    const g = svgEl("g", { "data-layer-replicas": layer, "data-replicas": count, class: count === 0 ? "gap" : "" });
    g.append(svgEl("rect", { x: label + layer * cell + 1, y: 2, width: cell - 2, height: top - 6, class: "replicas" }),
      svgEl("text", { x: label + layer * cell + cell / 2, y: top - 8, class: "count" }, String(count)),
      svgEl("title", {}, `layer ${layer}: ${count} live node${count === 1 ? "" : "s"}`));
    svg.append(g);
  });

  rows.forEach(({ node, spans }, i) => {
    const y = top + i * rowH;
    const g = svgEl("g", { "data-node": node.id, "data-state": node.state, class: `state-${node.state}` });
    g.append(svgEl("text", { x: 4, y: y + 14, class: "node" }, node.id));
    for (const s of spans) {
      for (let layer = s.begin; layer < s.end; layer++) {
        g.append(svgEl("rect", { x: label + layer * cell + 1, y: y + 2, width: cell - 2, height: rowH - 4,
          "data-layer": layer, class: `cell state-${s.state}` },
        svgEl("title", {}, `${node.id} · layer ${layer} · ${s.state}`)));
      }
    }
    if (!spans.length) {
      const what = node.stages && node.stages.length ? node.stages.join(" · ") : "no layers";
      g.append(svgEl("text", { x: label + 4, y: y + 14, class: "stages" }, what));
    }
    svg.append(g);
  });

  for (let layer = 0; layer < n; layer += 5) {
    svg.append(svgEl("text", { x: label + layer * cell + 2, y: height - 4, class: "axis" }, String(layer)));
  }
  document.getElementById("coverage").replaceChildren(svg);
}

// ------------------------------------------------------------------ tables

// Keeps one <tr> per item in `tbody` (keyed by data-KEY), so rows and their
// buttons survive each poll; `create(tr)` fills a new row once, `update(tr,
// item)` on every poll.
function syncRows(tbody, items, key, create, update) {
  const attr = `data-${key}`;
  const existing = new Map([...tbody.children].map((tr) => [tr.getAttribute(attr), tr]));
  items.forEach((item, i) => {
    const id = item.__key;
    let tr = existing.get(id);
    if (!tr) {
      tr = document.createElement("tr");
      tr.setAttribute(attr, id);
      create(tr, item);
    }
    existing.delete(id);
    update(tr, item);
    if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
  });
  existing.forEach((tr) => tr.remove());
}

function setCells(tr, values) {
  values.forEach((v, i) => {
    const td = tr.cells[i];
    if (v instanceof Node) td.replaceChildren(v);
    else if (td.textContent !== String(v)) td.textContent = v;
  });
}

function addCells(tr, n) {
  for (let i = 0; i < n; i++) tr.append(document.createElement("td"));
}

function renderNodes(nodes) {
  const tbody = document.querySelector("#nodes tbody");
  syncRows(tbody, nodes.map((n) => ({ ...n, __key: n.id })), "node",
    (tr, n) => {
      addCells(tr, 13);
      const td = document.createElement("td");
      if (n.role === "shard") td.append(el("button", { "data-action": "drain", type: "button" }, "Drain"));
      tr.append(td);
    },
    (tr, n) => {
      tr.dataset.state = n.state;
      tr.dataset.role = n.role;
      tr.className = `state-${n.state}`;
      const button = tr.querySelector("button[data-action=drain]");
      if (button) button.disabled = n.state === "draining" || n.state === "lost";
      const heartbeat = n.role === "head" ? "—" : `${fmtAge(n.last_heartbeat_ms)} ago`;
      setCells(tr, [n.id, n.role, serves(n), stateBadge(n), heartbeat, n.sessions, cacheUse(n),
        n.tokens_per_s.toFixed(1), fmtBytes(n.rss_bytes), n.version, n.device || "—",
        fmtMs(n.rtt_ms), fmtMs(n.step_ms)]);
    });
}

function serves(n) {
  const parts = [];
  if (n.layers) parts.push(`layers ${n.layers[0]}–${n.layers[1]}`);
  if (n.stages && n.stages.length) parts.push(n.stages.join(", "));
  return parts.join("; ") || "—";
}

function stateBadge(n) {
  const badge = el("span", { class: `badge state-${n.state}`, title: n.detail || n.state }, n.state);
  return n.detail ? el("span", {}, badge, el("small", { class: "detail" }, ` ${n.detail}`)) : badge;
}

function cacheUse(n) {
  if (!n.cache_budget_bytes) return n.cache_bytes ? fmtBytes(n.cache_bytes) : "—";
  const share = Math.min(1, n.cache_bytes / n.cache_budget_bytes);
  return el("span", { class: "cache" }, progressBar(share),
    ` ${fmtBytes(n.cache_bytes)} / ${fmtBytes(n.cache_budget_bytes)}`);
}

const JOB_ORDER = { running: 0, queued: 1, completed: 2, aborted: 3 };

function renderJobs(jobs) {
  const sorted = jobs.map((j) => ({ ...j, __key: j.job_id }))
    .sort((a, b) => (JOB_ORDER[a.state] ?? 4) - (JOB_ORDER[b.state] ?? 4) || a.queue_position - b.queue_position);
  syncRows(document.querySelector("#jobs tbody"), sorted, "job",
    (tr) => {
      addCells(tr, 6);
      const td = document.createElement("td");
      td.append(el("button", { "data-action": "cancel", type: "button" }, "Cancel"));
      tr.append(td);
    },
    (tr, j) => {
      Object.assign(tr.dataset, { state: j.state, session: j.session_id, tokens: j.tokens, maxTokens: j.max_tokens,
        route: (j.route || []).join(",") });
      tr.className = `job-${j.state}${j.job_id === view.selectedJob ? " selected" : ""}`;
      tr.querySelector("button[data-action=cancel]").hidden = j.state === "completed" || j.state === "aborted";
      const share = j.max_tokens ? j.tokens / j.max_tokens : 0;
      const progress = el("span", { class: "progress" }, progressBar(share), ` ${j.tokens} / ${j.max_tokens}`);
      setCells(tr, [j.job_id, j.state, progress,
        j.state === "queued" ? `#${j.queue_position}` : "—", fmtAge(j.age_ms), routeText(j.route)]);
      if (j.job_id === view.selectedJob && j.session_id && j.session_id !== view.selectedSession) {
        view.selectedSession = j.session_id;  // a queued job got its session
      }
    });
  document.getElementById("jobs-empty").hidden = jobs.length > 0;
}

// "a → b → c", breaking lines only at the arrows.
function routeText(route) {
  if (!route || !route.length) return "—";
  const text = el("span", {});
  route.forEach((node, i) => text.append(...(i ? [" → "] : []), el("span", { class: "hop" }, node)));
  return text;
}

function progressBar(share) {
  const bar = el("span", { class: "bar" });
  bar.append(el("span", { class: "fill", style: `width: ${(100 * share).toFixed(1)}%` }));
  return bar;
}

// ------------------------------------------------------------------ waterfall

// One bar per step, split into each hop's queue, compute and send time in ring
// order, then the step's network time; all bars on one scale, so a hop that
// waits (a pipeline bubble) or a slow link shows as a long pale or grey part.
function renderWaterfall() {
  const box = document.getElementById("waterfall");
  document.getElementById("waterfall-title").textContent = view.selectedSession || "—";
  box.dataset.session = view.selectedSession;
  const t = view.timeline;
  if (!t || !t.steps.length) {
    const why = view.selectedSession ? "No steps yet." : view.selectedJob ? "Queued: no session yet."
      : "Click a job to see where each token's time goes.";
    box.replaceChildren(el("p", { class: "empty" }, why));
    return;
  }
  if (t.ended) box.dataset.ended = "";
  else delete box.dataset.ended;

  const steps = t.steps.slice(-WATERFALL_STEPS);
  const colour = hopColours(steps);
  const label = 90, barW = 640, rowH = 13, top = 4;
  const scale = barW / Math.max(...steps.map((s) => s.total_ms), 1e-3);
  const height = top + steps.length * rowH + 18;
  const width = label + barW + 8;
  const svg = svgEl("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img" });

  steps.forEach((step, i) => {
    const y = top + i * rowH;
    const g = svgEl("g", { "data-step": step.index });
    g.append(svgEl("text", { x: 2, y: y + rowH - 3, class: "axis" }, `#${step.index} ${step.total_ms.toFixed(1)} ms`));
    let x = label;
    const segment = (hop, stage, part, ms, fill) => {
      const w = Math.max(0, ms * scale);
      const title = svgEl("title", {}, `${hop} (${stage}) ${part} ${ms.toFixed(2)} ms`);
      g.append(svgEl("rect", { x, y, width: w, height: rowH - 2, fill, "data-hop": hop, "data-stage": stage,
        "data-part": part, class: `part-${part}` }, title));
      x += w;
    };
    for (const h of step.hops) {
      for (const part of ["queue", "compute", "send"]) {
        segment(h.node, h.stage, part, h[`${part}_ms`], colour.get(hopKey(h)));
      }
    }
    segment("network", "network", "network", step.network_ms, "#9a9a9a");
    svg.append(g);
  });
  const max = barW / scale;
  [0, 0.5, 1].forEach((f) => svg.append(svgEl("text", { x: label + f * barW, y: height - 4,
    class: `axis ${["", "middle", "end"][2 * f]}` }, fmtMs(f * max))));

  const ended = t.ended ? [el("p", { class: "empty" }, "Session ended.")] : [];
  box.replaceChildren(svg, waterfallLegend(steps, colour), ...ended);
}

// A colour per hop (node and stage), in ring order.
function hopColours(steps) {
  const colour = new Map();
  for (const s of steps) for (const h of s.hops) {
    if (!colour.has(hopKey(h))) colour.set(hopKey(h), HOP_COLOURS[colour.size % HOP_COLOURS.length]);
  }
  return colour;
}

function hopKey(h) {
  return `${h.node} (${h.stage})`;
}

// Per hop (node and stage): its colour and mean queue / compute / send time.
function waterfallLegend(steps, colour) {
  const sums = new Map();
  for (const s of steps) for (const h of s.hops) {
    const key = hopKey(h);
    const sum = sums.get(key) || { key, queue: 0, compute: 0, send: 0, n: 0 };
    sum.queue += h.queue_ms; sum.compute += h.compute_ms; sum.send += h.send_ms; sum.n += 1;
    sums.set(key, sum);
  }
  const network = steps.reduce((a, s) => a + s.network_ms, 0) / steps.length;
  const list = el("ul", { class: "legend" });
  for (const s of sums.values()) {
    const means = `${fmtMs(s.queue / s.n)} queue · ${fmtMs(s.compute / s.n)} compute · ${fmtMs(s.send / s.n)} send`;
    list.append(el("li", {}, el("span", { class: "swatch", style: `background: ${colour.get(s.key)}` }),
      `${s.key} `, el("small", {}, means)));
  }
  list.append(el("li", {}, el("span", { class: "swatch", style: "background: #9a9a9a" }), "network ",
    el("small", {}, `${fmtMs(network)} per step`)));
  list.append(el("li", { class: "parts" }, el("small", {}, "each hop: pale = queue, solid = compute, dark = send")));
  return list;
}

// ------------------------------------------------------------------ charts

function renderCharts(history) {
  const box = document.getElementById("charts");
  box.replaceChildren(...CHARTS.map(([name, title, fmt]) =>
    lineChart(name, title, history.series[name] || [], history.now_ms, 1000 * (history.interval_s || 1), fmt)));
}

// A small line chart of [[t_ms, v], ...] up to now_ms: over the last 10
// minutes, or over what there is of them, but at least a minute.
function lineChart(name, title, points, nowMs, intervalMs, fmt) {
  const w = 300, h = 110, left = 4, top = 18, bottom = 14;
  const spanMs = Math.min(600e3, Math.max(60e3, points.length ? nowMs - points[0][0] : 0));
  const max = Math.max(1e-9, ...points.map((p) => p[1]));
  const x = (t) => left + (w - 2 * left) * (1 - (nowMs - t) / spanMs);
  const y = (v) => top + (h - top - bottom) * (1 - v / max);
  const shown = points.filter((p) => nowMs - p[0] <= spanMs);
  const last = points.length ? points[points.length - 1][1] : 0;
  const svg = svgEl("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, "data-series": name, role: "img" });
  svg.append(svgEl("text", { x: left, y: 12, class: "title" }, title),
    svgEl("text", { x: w - left, y: 12, class: "value" }, fmt(last)),
    svgEl("line", { x1: left, x2: w - left, y1: y(0), y2: y(0), class: "baseline" }),
    svgEl("text", { x: left, y: top + 8, class: "axis" }, `max ${fmt(max > 1e-9 ? max : 0)}`),
    svgEl("text", { x: left, y: h - 2, class: "axis" }, `−${fmtAge(spanMs)}`),
    svgEl("text", { x: w - left, y: h - 2, class: "axis end" }, "now"));
  if (shown.length) {
    // A new subpath after a gap in the samples (a head restart), instead of a line across it.
    const gapMs = 2.5 * intervalMs;
    const move = (i) => (i && shown[i][0] - shown[i - 1][0] <= gapMs ? "L" : "M");
    const d = shown.map((p, i) => `${move(i)}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join("");
    svg.append(svgEl("path", { d, class: "line" }));
  }
  return svg;
}

// ------------------------------------------------------------------ formatting

function fmtBytes(b) {
  if (!b) return "0 B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  const i = Math.min(units.length - 1, Math.floor(Math.log2(Math.max(1, b)) / 10));
  return `${(b / 2 ** (10 * i)).toFixed(i ? 1 : 0)} ${units[i]}`;
}

function fmtMs(ms) {
  if (ms == null || ms < 0) return "—";
  return ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 1 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`;
}

function fmtAge(ms) {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

// ------------------------------------------------------------------ DOM helpers

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

function svgEl(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

// ------------------------------------------------------------------ start

function start() {
  const key = document.getElementById("admin-key");
  key.value = adminKey();
  key.addEventListener("input", () => {
    if (key.value) sessionStorage.setItem(KEY_STORAGE, key.value);
    else sessionStorage.removeItem(KEY_STORAGE);
  });
  document.querySelector("#nodes tbody").addEventListener("click", (e) => {
    const button = e.target.closest("button[data-action=drain]");
    if (button) drain(button, button.closest("tr").dataset.node);
  });
  document.querySelector("#jobs tbody").addEventListener("click", (e) => {
    const tr = e.target.closest("tr");
    const button = e.target.closest("button[data-action=cancel]");
    if (button) cancel(button, tr.dataset.job);
    else if (tr) select(tr.dataset.job, tr.dataset.session);
  });
  document.getElementById("message").addEventListener("click", (e) => {
    const line = e.target.closest("[data-source]");
    if (line) clearMessage(line.dataset.source);
  });
  loop();
}

start();
