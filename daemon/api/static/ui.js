// wattsched status page. Polls the read-only API and redraws; charts are inline SVG.
// Every value from the API goes into the page through textContent or an attribute, never
// through a property that parses HTML: a job id or user name cannot inject markup.
"use strict";

(() => {
  const SVG = "http://www.w3.org/2000/svg";
  const params = new URLSearchParams(location.search);
  const POLL_MS = Math.max(200, Number(params.get("poll")) || 5000);
  const QUEUE_ROWS = 200;
  const ACTION_ROWS = 50;
  const STATES = ["on", "off", "booting", "shutting_down", "failed"];
  let token = ""; // the bearer token, in this page's memory only
  let modePicked = false; // the operator chose a mode not yet sent: the poll leaves it alone
  let updates = 0;

  const $ = (id) => document.getElementById(id);

  /** An element with attributes and text (text through textContent only). */
  function el(tag, attrs = {}, text = null, ns = null) {
    const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== null && text !== undefined) e.textContent = String(text);
    return e;
  }
  const svg = (tag, attrs = {}, text = null) => el(tag, attrs, text, SVG);

  function watts(w) {
    if (w === null || w === undefined) return "none";
    return `${Math.round(w)} W`;
  }
  function duration(s) {
    if (s === null || s === undefined) return "–";
    const a = Math.abs(s);
    if (a < 120) return `${Math.round(s)} s`;
    if (a < 7200) return `${Math.round(s / 60)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  }
  const clock = (epoch) => new Date(epoch * 1000).toLocaleTimeString();

  async function getJSON(path) {
    const r = await fetch(path, { headers: { Accept: "application/json" }, cache: "no-store" });
    if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
    return r.json();
  }

  // ---- status and power -------------------------------------------------------------
  function renderStatus(st) {
    $("mode").textContent = st.mode;
    $("mode").className = `badge mode-${st.mode}`;
    $("dispatcher").textContent = `dispatcher ${st.dispatcher}`;
    const age = st.last_cycle_at ? Date.now() / 1000 - st.last_cycle_at : null;
    const ok = st.last_cycle_ok === false ? ` failed: ${st.last_error || ""}` : "";
    $("cycle").textContent = `cycle ${st.cycles}, ${duration(age)} ago${ok}`;
    $("cycle").classList.toggle("bad", st.last_cycle_ok === false);
    setWatts($("power"), st.power_w);
    setWatts($("cap"), st.cap_w);
    const head = st.power_w !== null && st.cap_w !== null ? st.cap_w - st.power_w : null;
    setWatts($("headroom"), head);
    $("headroom").classList.toggle("bad", head !== null && head < 0);
    const fill = $("meter-fill");
    const frac = head === null ? 0 : Math.min(1, st.power_w / Math.max(st.cap_w, 1));
    fill.style.width = `${(frac * 100).toFixed(1)}%`;
    fill.classList.toggle("bad", head !== null && head < 0);
    if (!modePicked && document.activeElement !== $("mode-input")) $("mode-input").value = st.mode;
    renderCooling(st);
  }

  // PUE, cooling power, outside temperature and profit rate: shown with a [cooling] table.
  function renderCooling(st) {
    const has = st.pue !== null && st.pue !== undefined;
    $("cooling").hidden = !has;
    if (!has) return;
    setFigure($("pue"), st.pue, (v) => v.toFixed(3));
    setWatts($("cooling-w"), st.cooling_w);
    setFigure($("celsius"), st.celsius, (v) => `${v.toFixed(1)} °C`);
    setFigure($("profit"), st.profit_per_h, (v) => v.toFixed(2));
  }

  function setFigure(node, v, fmt) {
    const none = v === null || v === undefined;
    node.textContent = none ? "–" : fmt(v);
    node.dataset.value = none ? "" : String(v);
  }

  function setWatts(node, w) {
    node.textContent = w === null || w === undefined ? "none" : watts(w);
    node.dataset.watts = w === null || w === undefined ? "" : String(w);
  }

  function renderPowerChart(samples) {
    const chart = $("power-chart");
    const W = 600, H = 160, pad = 4;
    const parts = [];
    if (samples.length) {
      const t1 = samples[samples.length - 1].time;
      const t0 = samples[0].time < t1 ? samples[0].time : t1 - 60;
      if (samples[0].time === t1) { // one sample (or one time): a level line
        samples = [{ ...samples[samples.length - 1], time: t0 }, samples[samples.length - 1]];
      }
      const top = Math.max(1, ...samples.map((s) => Math.max(s.it_power_w, s.cap_w || 0))) * 1.1;
      const x = (t) => pad + ((t - t0) / Math.max(1, t1 - t0)) * (W - 2 * pad);
      const y = (w) => H - pad - (w / top) * (H - 2 * pad);
      const line = (pts, cls) => svg("polyline", { points: pts.join(" "), class: cls });
      parts.push(line(samples.map((s) => `${x(s.time)},${y(s.it_power_w)}`), "power-line"));
      const caps = samples.filter((s) => s.cap_w !== null);
      if (caps.length) parts.push(line(caps.map((s) => `${x(s.time)},${y(s.cap_w)}`), "cap-line"));
      parts.push(svg("text", { x: pad + 2, y: 12, class: "axis" }, `${Math.round(top)} W`));
    } else {
      parts.push(svg("text", { x: 10, y: 20, class: "axis" }, "waiting for samples"));
    }
    chart.replaceChildren(...parts);
  }

  // ---- nodes ------------------------------------------------------------------------
  function renderNodes(nodes) {
    const counts = {};
    const cells = nodes.map((n) => {
      counts[n.power_state] = (counts[n.power_state] || 0) + 1;
      const busy = n.busy_units > 0 ? " busy" : "";
      const off = n.available ? "" : " unavailable";
      const c = el("div", { class: `node ps-${cssState(n.power_state)}${busy}${off}` });
      c.dataset.name = n.name;
      c.dataset.powerState = n.power_state;
      c.title = `${n.name}: ${n.power_state}${n.available ? "" : " (unavailable)"}, ` +
        `${n.busy_units} busy units, ${n.cores} cores` + (n.partition ? `, ${n.partition}` : "");
      if (n.outlet_celsius !== null && n.outlet_celsius !== undefined) {
        // [thermal]: a stripe from blue (20 °C) to red (90 °C and over) under the square.
        c.dataset.outletCelsius = String(n.outlet_celsius);
        const f = Math.min(1, Math.max(0, (n.outlet_celsius - 20) / 70));
        c.style.boxShadow = `inset 0 -4px 0 hsl(${Math.round(240 * (1 - f))}, 80%, 50%)`;
        c.title += `, outlet ${n.outlet_celsius.toFixed(1)} °C (${n.outlet_source})`;
      }
      return c;
    });
    $("node-map").replaceChildren(...cells);
    $("nodes-count").textContent = `${nodes.length} nodes`;
    const key = (cls, text) => {
      const k = el("span", { class: "key" });
      k.append(el("span", { class: `swatch ${cls}` }), text);
      return k;
    };
    const legend = [...new Set([...STATES, ...Object.keys(counts)])].map((s) =>
      key(`ps-${cssState(s)}`, `${s} ${counts[s] || 0}`));
    legend.push(key("ps-on busy", "on, busy"), key("ps-on unavailable", "unavailable"));
    $("node-legend").replaceChildren(...legend);
  }
  const cssState = (s) => (STATES.includes(s) ? s : "other");

  // ---- plan (Gantt) -----------------------------------------------------------------
  function renderGantt(plan) {
    const g = $("gantt");
    const entries = plan.entries || [];
    $("plan-info").textContent = plan.cycle_id === null ? "no plan yet" :
      `cycle ${plan.cycle_id}, ${entries.length} jobs, solver ${plan.solver_status || "–"}` +
      (plan.planned_mean_wait_s !== null ? `, mean planned wait ${duration(plan.planned_mean_wait_s)}` : "");
    g.dataset.cycle = plan.cycle_id === null ? "" : String(plan.cycle_id);
    if (!entries.length) {
      g.setAttribute("viewBox", "0 0 800 30");
      g.setAttribute("height", "30");
      g.replaceChildren(svg("text", { x: 10, y: 20, class: "axis" }, "no planned job"));
      return;
    }
    const W = Math.max(400, g.parentElement.clientWidth - 2 || 800); // drawn at 1:1
    const row = entries.length > 200 ? 4 : entries.length > 60 ? 8 : 16;
    const labelW = row >= 8 ? 190 : 4; // no room for labels on thin rows: hover a bar
    const axisH = 18, H = axisH + row * entries.length;
    const t0 = Math.min(plan.time ?? entries[0].start, ...entries.map((e) => e.start));
    const t1 = Math.max(...entries.map((e) => e.end), t0 + 60);
    const x = (t) => labelW + ((t - t0) / (t1 - t0)) * (W - labelW - 4);
    const parts = [];
    for (let i = 0; i <= 4; i++) {
      const t = t0 + ((t1 - t0) * i) / 4;
      parts.push(svg("line", { x1: x(t), x2: x(t), y1: axisH - 4, y2: H, class: "grid" }));
      const end = i === 4; // the last label ends at its line (inside the chart)
      parts.push(svg("text", { x: x(t) + (end ? -2 : 2), y: 12, class: "axis", "text-anchor": end ? "end" : "start" },
        i === 0 ? "now" : `+${duration(t - t0)}`));
    }
    entries.forEach((e, i) => {
      const y = axisH + i * row;
      const bar = svg("rect", {
        x: x(e.start), y: y + 0.5, height: Math.max(1, row - 1),
        width: Math.max(1, x(e.end) - x(e.start)), class: "bar",
      });
      bar.dataset.job = e.job_id;
      bar.appendChild(svg("title", {}, `${e.job_id}: +${duration(e.start - t0)} to ` +
        `+${duration(e.end - t0)} on ${e.nodes.join(",")}`));
      parts.push(bar);
      if (row >= 8) parts.push(svg("text", { x: 2, y: y + row - 3, class: "job-label" }, cut(e.job_id, 32)));
    });
    g.setAttribute("viewBox", `0 0 ${W} ${H}`);
    g.setAttribute("height", String(H));
    g.replaceChildren(...parts);
  }

  // ---- queue and actions ------------------------------------------------------------
  const cut = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

  /** A table row; a long cell is cut (CSS) and whole in its tooltip. */
  function row(cells, cls = "") {
    const tr = el("tr", cls ? { class: cls } : {});
    for (const c of cells) {
      const td = el("td", {}, c);
      if (String(c).length > 24) td.title = String(c);
      tr.appendChild(td);
    }
    return tr;
  }

  function renderQueue(page, planTime) {
    const rows = page.items.map((j) => row([
      j.id, j.user || "", j.queue, `${j.units} × ${j.unit_cores}`, duration(j.walltime),
      j.planned_start === null ? "–" : planTime !== null ? `+${duration(j.planned_start - planTime)}` : String(j.planned_start),
      j.held_by || "",
    ], "job"));
    $("queue").tBodies[0].replaceChildren(...rows);
    const more = page.total > page.items.length ? ` (first ${page.items.length} shown)` : "";
    $("queue-count").textContent = `${page.total} queued${more}`;
  }

  function renderActions(actions) {
    let failures = 0;
    const rows = actions.map((a) => {
      const failed = a.state === "failed" || !!a.error;
      if (failed) failures += 1;
      const target = [a.job_id, a.nodes].filter((v) => v).join(" on ");
      return row([clock(a.created_at), a.kind, target, a.state, a.error || a.result || ""],
        failed ? "action failed" : "action");
    });
    $("actions").tBodies[0].replaceChildren(...rows);
    $("failures").textContent = `${actions.length} shown, ${failures} failed`;
    $("failures").classList.toggle("bad", failures > 0);
  }

  // ---- polling ----------------------------------------------------------------------
  async function refresh() {
    try {
      const [st, nodes, queue, plan, power, actions] = await Promise.all([
        getJSON("status"), getJSON("nodes"),
        getJSON(`jobs?state=queued&limit=${QUEUE_ROWS}`), getJSON("plan"),
        getJSON("power?window=3600&limit=5000"),
        getJSON(`actions?newest_first=true&limit=${ACTION_ROWS}`),
      ]);
      if (updates === 0) performance.mark("wattsched-first-data"); // bench/ui_load.py
      renderStatus(st);
      renderPowerChart(power);
      renderNodes(nodes);
      renderGantt(plan);
      renderQueue(queue, plan.time);
      renderActions(actions);
      $("conn").hidden = true;
      updates += 1;
      if (updates === 1) performance.mark("wattsched-first-render"); // bench/ui_load.py
      document.body.dataset.updates = String(updates);
      document.body.dataset.cycles = String(st.cycles);
    } catch (err) {
      $("conn").hidden = false;
      $("conn").className = "badge bad";
      $("conn").textContent = `cannot reach the daemon (${err.message})`;
    } finally {
      setTimeout(refresh, POLL_MS);
    }
  }

  // ---- controls (token) -------------------------------------------------------------
  function setLocked(locked) {
    for (const id of ["cap-input", "cap-set", "cap-clear", "mode-input", "mode-set", "lock"]) {
      $(id).disabled = locked;
    }
    $("unlock").disabled = !locked;
    $("token").disabled = !locked;
    document.body.dataset.unlocked = locked ? "false" : "true";
  }

  function message(text, bad) {
    $("control-msg").textContent = text;
    $("control-msg").className = bad ? "bad" : "good";
  }

  /** PUT a setting; the server decides (401 without a token, 403 with a wrong one). */
  async function put(path, body, what) {
    const headers = { "Content-Type": "application/json", Accept: "application/json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    let r;
    try {
      r = await fetch(path, { method: "PUT", headers, body: JSON.stringify(body) });
    } catch (err) {
      message(`${what}: ${err.message}`, true);
      return;
    }
    let detail = "";
    try {
      const data = await r.json();
      detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail || "");
    } catch (_) { /* not JSON */ }
    if (r.ok) {
      message(`${what}: done`, false);
      refreshSoon();
    } else {
      message(`${what} refused (HTTP ${r.status}): ${detail}`, true);
    }
  }
  let soon = null;
  function refreshSoon() {
    if (soon === null) soon = setTimeout(() => { soon = null; refreshOnce(); }, 100);
  }
  async function refreshOnce() {
    try { renderStatus(await getJSON("status")); } catch (_) { /* the poll will say */ }
  }

  function wire() {
    $("token-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      token = $("token").value.trim();
      $("token").value = "";
      setLocked(!token);
      message(token ? "unlocked: the server checks the token on each change" : "no token", !token);
    });
    $("lock").addEventListener("click", () => {
      token = "";
      setLocked(true);
      message("locked", false);
    });
    $("cap-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const w = Number($("cap-input").value);
      if (!Number.isFinite(w) || w <= 0) { message("the cap must be a positive number of watts", true); return; }
      put("config/power-cap", { watts: w }, `cap ${watts(w)}`);
    });
    $("cap-clear").addEventListener("click", () => put("config/power-cap", { watts: null }, "no cap"));
    $("mode-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const mode = $("mode-input").value;
      put("config/mode", { mode }, `mode ${mode}`).finally(() => { modePicked = false; });
    });
    $("mode-input").addEventListener("change", () => { modePicked = true; });
    setLocked(true);
  }

  wire();
  refresh();
})();
