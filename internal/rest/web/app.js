// Weir's dashboard: plain JavaScript and SVG, no dependencies. It polls
// the job's snapshot (/weir/jobs/:id/snapshot) every second, keeps the
// last samples in memory for its charts, and asks the doctor
// (/weir/jobs/:id/doctor) every few seconds.
'use strict';

const MIN_WM = -9223372036854775808;
const MAX_WM = 9223372036854775807;
const NS = 'http://www.w3.org/2000/svg';
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'];
const state = { jobId: null, snaps: [], selected: null, maxSnaps: 300, checkpoint: null, busy: false, features: {} };

const $ = (id) => document.getElementById(id);

function svg(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function html(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'onclick') e.addEventListener('click', v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); return e; }

function token() { return $('token').value.trim(); }

async function get(path) {
  const headers = {};
  if (token()) headers.Authorization = 'Bearer ' + token();
  const r = await fetch(path, { headers });
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { const b = await r.json(); if (b.errors) msg += ': ' + b.errors.join('; '); } catch (e) { /* not JSON */ }
    throw new Error(msg);
  }
  return r.json();
}

function fmtNum(x) {
  if (!isFinite(x)) return '–';
  const a = Math.abs(x);
  if (a >= 1e9) return (x / 1e9).toFixed(1) + 'G';
  if (a >= 1e6) return (x / 1e6).toFixed(1) + 'M';
  if (a >= 1e4) return (x / 1e3).toFixed(1) + 'k';
  if (a >= 100 || Number.isInteger(x)) return String(Math.round(x));
  return x.toFixed(1);
}

function fmtBytes(x) {
  if (x >= 1 << 30) return (x / (1 << 30)).toFixed(1) + ' GiB';
  if (x >= 1 << 20) return (x / (1 << 20)).toFixed(1) + ' MiB';
  if (x >= 1 << 10) return (x / (1 << 10)).toFixed(1) + ' KiB';
  return x + ' B';
}

function fmtWM(wm) {
  if (wm === undefined || wm === null) return '–';
  if (wm <= MIN_WM + 1) return 'none';
  if (wm >= MAX_WM - 1) return 'end';
  return new Date(wm).toISOString().replace('T', ' ').replace('Z', '');
}

function fmtDur(ms) {
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
}

function validWM(wm) { return wm !== undefined && wm > MIN_WM + 1 && wm < MAX_WM - 1; }

// rates between two snapshots, as monitor.Rates: by vertex id, per subtask.
function rates(older, newer) {
  const out = {};
  if (!newer) return out;
  const secs = older ? (newer.timestamp - older.timestamp) / 1000 : 0;
  for (const v of newer.vertices) {
    const ov = older && older.vertices.find((x) => x.id === v.id);
    out[v.id] = v.subtasks.map((s, i) => {
      const r = { in: 0, out: 0, busy: 0, idle: 0, bp: 0, inputs: [] };
      const o = ov && ov.subtasks[i];
      if (!o || secs <= 0) return r;
      r.in = Math.max(s['records-in'] - o['records-in'], 0) / secs;
      r.out = Math.max(s['records-out'] - o['records-out'], 0) / secs;
      const busy = s['busy-ns'] - o['busy-ns'], idle = s['idle-ns'] - o['idle-ns'], bp = s['backpressured-ns'] - o['backpressured-ns'];
      const total = busy + idle + bp;
      if (total > 0) { r.busy = 1000 * busy / total; r.idle = 1000 * idle / total; r.bp = 1000 * bp / total; }
      r.inputs = (s['input-records'] || []).map((n, j) => Math.max(n - ((o['input-records'] || [])[j] || 0), 0) / secs);
      return r;
    });
  }
  return out;
}

// ref returns the sample about a few seconds before the newest.
function ref(back) {
  const n = state.snaps.length;
  return n > 1 ? state.snaps[Math.max(0, n - 1 - (back || 3))] : null;
}

function latest() { return state.snaps[state.snaps.length - 1]; }

function vertexRates(v, rs) {
  const list = rs[v.id] || [];
  const sum = { in: 0, out: 0, busy: 0, bp: 0, idle: 0 };
  for (const r of list) { sum.in += r.in; sum.out += r.out; sum.busy = Math.max(sum.busy, r.busy); sum.bp = Math.max(sum.bp, r.bp); sum.idle += r.idle; }
  if (list.length) sum.idle /= list.length;
  return sum;
}

function vertexColor(r) {
  if (r.bp > 100) return mix('#f3d6d4', '#c8423b', Math.min(r.bp / 1000 * 2, 1));
  if (r.busy > 100) return mix('#fbe5cc', '#e07b1a', Math.min(r.busy / 1000, 1));
  return '#dbeaf7';
}

function mix(a, b, t) {
  const p = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
  const x = p(a), y = p(b);
  return '#' + x.map((c, i) => Math.round(c + (y[i] - c) * t).toString(16).padStart(2, '0')).join('');
}

function renderHeader(s) {
  $('job-name').textContent = s.job.name;
  const st = $('job-state');
  st.textContent = s.job.state;
  st.className = 'state ' + s.job.state;
  $('job-id').textContent = s.job.id;
  const end = s.job['end-time'] > 0 ? s.job['end-time'] : s.timestamp;
  $('job-uptime').textContent = (s.job['end-time'] > 0 ? 'ran ' : 'up ') + fmtDur(end - s.job['start-time']) + (s.job.restarts ? ', ' + s.job.restarts + ' restarts' : '');
  document.title = 'Weir: ' + s.job.name;
  // Cancel and stop with a savepoint, where /config allows it (web-cancel),
  // while the job has not ended.
  $('actions').hidden = !(state.features['web-cancel'] && !TERMINAL.includes(s.job.state));
}

const TERMINAL = ['FINISHED', 'CANCELED', 'FAILED'];

// send makes a write request with the token, as the server's guard asks:
// same origin, JSON or no body, Authorization: Bearer TOKEN.
async function send(method, path, body) {
  const headers = {};
  if (token()) headers.Authorization = 'Bearer ' + token();
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let b = {};
  try { b = await r.json(); } catch (e) { /* no body */ }
  if (!r.ok) {
    const why = (b.errors || []).join('; ') || r.statusText;
    throw new Error(r.status === 401 ? 'this action needs the server\'s token: enter it above (' + why + ')' : r.status + ': ' + why);
  }
  return b;
}

// confirmed arms a button on its first click and acts on the second.
function confirmed(button, label, act) {
  let armed = null;
  button.addEventListener('click', async () => {
    if (!armed) {
      button.textContent = 'Confirm: ' + label + '?';
      armed = setTimeout(() => { armed = null; button.textContent = label; }, 5000);
      return;
    }
    clearTimeout(armed);
    armed = null;
    button.textContent = label;
    button.disabled = true;
    try { await act(); } catch (e) { $('action-status').textContent = e.message; } finally { button.disabled = false; }
  });
}

async function cancelJob() {
  $('action-status').textContent = 'cancelling…';
  await send('PATCH', `/jobs/${state.jobId}?mode=cancel`);
  $('action-status').textContent = 'cancellation requested';
}

async function stopWithSavepoint() {
  $('action-status').textContent = 'taking a savepoint…';
  const t = await send('POST', `/jobs/${state.jobId}/stop`, { drain: false });
  for (;;) {
    await new Promise((res) => setTimeout(res, 500));
    const st = await get(`/jobs/${state.jobId}/savepoints/${t['request-id']}`);
    if (st.status.id !== 'COMPLETED') continue;
    const op = st.operation || {};
    if (op['failure-cause']) throw new Error('the savepoint failed: ' + op['failure-cause']['stack-trace']);
    $('action-status').textContent = 'stopped with savepoint ' + op.location;
    return;
  }
}

// depths lays the vertices out in columns by their longest path from a source.
function depths(s) {
  const d = {};
  const byId = Object.fromEntries(s.vertices.map((v) => [v.id, v]));
  const visit = (v, seen) => {
    if (d[v.id] !== undefined) return d[v.id];
    if (seen.has(v.id)) return 0;
    seen.add(v.id);
    let x = 0;
    for (const i of v.inputs || []) if (byId[i.from]) x = Math.max(x, visit(byId[i.from], seen) + 1);
    d[v.id] = x;
    return x;
  };
  for (const v of s.vertices) visit(v, new Set());
  return d;
}

function renderGraph(s, rs) {
  const g = clear($('graph'));
  const d = depths(s);
  const cols = {};
  for (const v of s.vertices) (cols[d[v.id]] = cols[d[v.id]] || []).push(v);
  const W = 200, H = 64, gapX = 80, gapY = 28, top = 10 + gapY;
  const pos = {};
  let maxRows = 1;
  for (const [c, vs] of Object.entries(cols)) {
    maxRows = Math.max(maxRows, vs.length);
    vs.forEach((v, i) => { pos[v.id] = { x: 10 + c * (W + gapX), y: top + i * (H + gapY), col: Number(c) }; });
  }
  const width = 20 + Object.keys(cols).length * (W + gapX), height = top + 10 + maxRows * (H + gapY);
  // Lanes: the horizontal gaps above, between and below the rows, where
  // no box stands. An edge that skips columns runs along the lane nearest
  // to its ends, so that it never passes behind a box.
  const lanes = [];
  for (let k = 0; k <= maxRows; k++) lanes.push(top + k * (H + gapY) - gapY / 2);
  g.setAttribute('viewBox', `0 0 ${width} ${height}`);
  g.style.height = Math.min(height, 420) + 'px';
  const defs = svg('defs');
  const marker = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' });
  marker.append(svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#888' }));
  defs.append(marker);
  g.append(defs);
  for (const v of s.vertices) {
    for (const i of v.inputs || []) {
      const a = pos[i.from], b = pos[v.id];
      if (!a || !b) continue;
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2 + (i.input ? 10 : 0) - ((v.inputs.length > 1 && !i.input) ? 10 : 0);
      const label = i['ship-strategy'] + (v.inputs.length > 1 ? ' → in ' + (i.input + 1) : '');
      const attrs = { fill: 'none', stroke: '#888', 'stroke-width': 1.4, 'marker-end': 'url(#arrow)', class: 'edge', 'data-from': i.from, 'data-to': v.id };
      if (b.col - a.col <= 1) {
        // Between neighbouring columns: a curve within the gap.
        const mx = (x1 + x2) / 2;
        g.append(svg('path', { ...attrs, d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` }));
        g.append(svg('text', { x: mx, y: (y1 + y2) / 2 - 4, 'text-anchor': 'middle', class: 'muted' }, label));
        continue;
      }
      // Over columns: down (or up) to a lane in the first gap, along it,
      // and back in the last gap.
      const lane = lanes.reduce((best, y) => (Math.abs(y - (y1 + y2) / 2) < Math.abs(best - (y1 + y2) / 2) ? y : best), lanes[0]);
      const xa = x1 + gapX, xb = x2 - gapX, ma = x1 + gapX / 2, mb = x2 - gapX / 2;
      g.append(svg('path', { ...attrs, d: `M${x1},${y1} C${ma},${y1} ${ma},${lane} ${xa},${lane} L${xb},${lane} C${mb},${lane} ${mb},${y2} ${x2},${y2}` }));
      g.append(svg('text', { x: (xa + xb) / 2, y: lane - 3, 'text-anchor': 'middle', class: 'muted' }, label));
    }
  }
  for (const v of s.vertices) {
    const p = pos[v.id], r = vertexRates(v, rs);
    const box = svg('g', { class: 'vertex', 'data-id': v.id, transform: `translate(${p.x},${p.y})` });
    box.addEventListener('click', () => { state.selected = v.id; render(); });
    box.append(svg('rect', { width: W, height: H, rx: 5, fill: vertexColor(r), stroke: state.selected === v.id ? '#24292e' : '#aaa', 'stroke-width': state.selected === v.id ? 2 : 1 }));
    const name = v.name.length > 30 ? v.name.slice(0, 29) + '…' : v.name;
    box.append(svg('text', { x: 8, y: 17, class: 'vertex-label' }, name));
    box.append(svg('text', { x: 8, y: 34 }, `in ${fmtNum(r.in)}/s · out ${fmtNum(r.out)}/s · p=${v.parallelism}`));
    box.append(svg('text', { x: 8, y: 51 }, `busy ${Math.round(r.busy / 10)}% · back-pressured ${Math.round(r.bp / 10)}%`));
    box.append(svg('title', {}, v.name));
    g.append(box);
  }
}

// lineChart draws series [{name, points: [[t, y]], dashed}] into an SVG;
// fmtY formats the y axis; gap draws the area between two series.
function lineChart(el, series, fmtY, gap) {
  const g = clear(el);
  const W = Math.max(el.clientWidth || 900, 300), H = 200, L = 150, R = 10, T = 10, B = 22;
  g.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const pts = series.flatMap((s) => s.points);
  if (!pts.length) {
    g.append(svg('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'muted' }, 'no data yet'));
    return;
  }
  let x0 = Math.min(...pts.map((p) => p[0])), x1 = Math.max(...pts.map((p) => p[0]));
  let y0 = Math.min(...pts.map((p) => p[1])), y1 = Math.max(...pts.map((p) => p[1]));
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y1 += 1; y0 -= 1; }
  const X = (x) => L + (x - x0) / (x1 - x0) * (W - L - R);
  const Y = (y) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  const axis = svg('g', { class: 'axis' });
  for (let i = 0; i <= 4; i++) {
    const y = y0 + (y1 - y0) * i / 4;
    axis.append(svg('line', { x1: L, x2: W - R, y1: Y(y), y2: Y(y), stroke: '#e5e7e9' }));
    axis.append(svg('text', { x: L - 6, y: Y(y) + 4, 'text-anchor': 'end' }, fmtY(y)));
  }
  axis.append(svg('text', { x: L, y: H - 6 }, new Date(x0).toLocaleTimeString()));
  axis.append(svg('text', { x: W - R, y: H - 6, 'text-anchor': 'end' }, new Date(x1).toLocaleTimeString()));
  g.append(axis);
  if (gap && series.length >= 2) {
    const a = series[0].points, b = series[1].points;
    const bt = new Map(b.map((p) => [p[0], p[1]]));
    const both = a.filter((p) => bt.has(p[0]));
    if (both.length > 1) {
      const top = both.map((p) => `${X(p[0])},${Y(p[1])}`);
      const bottom = both.slice().reverse().map((p) => `${X(p[0])},${Y(bt.get(p[0]))}`);
      g.append(svg('polygon', { points: top.concat(bottom).join(' '), fill: '#c8423b', 'fill-opacity': 0.12, class: 'gap' }));
    }
  }
  series.forEach((s, i) => {
    if (!s.points.length) return;
    const attrs = { points: s.points.map((p) => `${X(p[0])},${Y(p[1])}`).join(' '), fill: 'none', stroke: s.color || COLORS[i % COLORS.length], 'stroke-width': 2, 'vector-effect': 'non-scaling-stroke', class: 'series' };
    if (s.dashed) attrs['stroke-dasharray'] = '5 4';
    const line = svg('polyline', attrs);
    line.append(svg('title', {}, s.name));
    g.append(line);
  });
}

function legend(el, series) {
  clear(el);
  series.forEach((s, i) => {
    const sw = html('i', { class: 'sw' });
    sw.style.background = s.color || COLORS[i % COLORS.length];
    el.append(html('span', {}, sw, s.name + (s.note ? ' — ' + s.note : '')));
  });
}

function selectedVertex(s) {
  let v = s.vertices.find((x) => x.id === state.selected);
  if (!v) {
    v = s.vertices.find((x) => (x.inputs || []).length > 1 || (x.subtasks[0] && (x.subtasks[0]['input-watermarks'] || []).length > 1))
      || s.vertices.find((x) => (x.inputs || []).length > 0) || s.vertices[0];
    state.selected = v && v.id;
  }
  return v;
}

function renderVertexSelect(s, v) {
  const sel = $('vertex-select');
  if (sel.options.length !== s.vertices.length) {
    clear(sel);
    for (const x of s.vertices) sel.append(html('option', { value: x.id }, x.name));
  }
  sel.value = v.id;
}

// watermarkSeries returns, per input of a vertex, its watermark over time
// (the minimum over subtasks), or per split for a source.
function watermarkSeries(v) {
  const series = [];
  const n = (v.subtasks[0] && (v.subtasks[0]['input-watermarks'] || []).length) || 0;
  const from = (v.inputs || []).reduce((m, i) => { m[i.input] = i.from; return m; }, {});
  const names = {};
  for (const x of latest().vertices) names[x.id] = x.name;
  for (let i = 0; i < n; i++) {
    const points = [];
    let idleNow = false;
    for (const s of state.snaps) {
      const sv = s.vertices.find((x) => x.id === v.id);
      if (!sv) continue;
      const wms = sv.subtasks.map((st) => (st['input-watermarks'] || [])[i]).filter(validWM);
      idleNow = sv.subtasks.every((st) => (st['input-idle'] || [])[i]);
      if (wms.length === sv.subtasks.length && wms.length) points.push([s.timestamp, Math.min(...wms)]);
    }
    series.push({ name: `input ${i + 1}` + (from[i] && names[from[i]] ? ` (${names[from[i]]})` : ''), points, note: idleNow ? 'idle' : '' });
  }
  if (n === 0) {
    const ids = new Set();
    for (const s of state.snaps) {
      const sv = s.vertices.find((x) => x.id === v.id);
      for (const st of (sv ? sv.subtasks : [])) for (const op of st.operators) for (const sp of op.splits || []) ids.add(`${st.subtask}/${sp.id}`);
    }
    for (const id of ids) {
      const [sub, split] = id.split('/');
      const points = [];
      for (const s of state.snaps) {
        const sv = s.vertices.find((x) => x.id === v.id);
        const st = sv && sv.subtasks[+sub];
        const sp = st && st.operators.flatMap((o) => o.splits || []).find((x) => x.id === split);
        if (sp && validWM(sp.watermark)) points.push([s.timestamp, sp.watermark]);
      }
      series.push({ name: `split ${split} (subtask ${sub})`, points });
    }
  }
  return series;
}

function renderVertex(s, rs) {
  const v = selectedVertex(s);
  if (!v) return;
  renderVertexSelect(s, v);
  const r = vertexRates(v, rs);
  let late = 0;
  for (const st of v.subtasks) for (const op of st.operators) late += op['late-records-dropped'];
  const sum = clear($('vertex-summary'));
  sum.append(html('span', {}, `${v.name}: parallelism ${v.parallelism}, in ${fmtNum(r.in)}/s, out ${fmtNum(r.out)}/s, late records dropped ${fmtNum(late)}`));
  const series = watermarkSeries(v);
  if (series.length === 2 && series[0].points.length && series[1].points.length) {
    const a = series[0].points[series[0].points.length - 1][1], b = series[1].points[series[1].points.length - 1][1];
    series[Math.abs(a - b) > 0 ? (a < b ? 0 : 1) : 0].note = (series[a < b ? 0 : 1].note ? series[a < b ? 0 : 1].note + ', ' : '') + 'gap ' + fmtDur(Math.abs(a - b));
  }
  lineChart($('wm-chart'), series, (y) => fmtWM(Math.round(y)).slice(5, 23), true);
  legend($('wm-legend'), series);
  const t = clear($('subtasks'));
  const n = (v.subtasks[0] && (v.subtasks[0]['input-watermarks'] || []).length) || 0;
  const head = ['subtask', 'status', 'in/s', 'out/s', 'busy ms/s', 'idle ms/s', 'back-pressured ms/s'];
  for (let i = 0; i < n; i++) head.push(`input ${i + 1} watermark`);
  head.push('late dropped', 'state entries', 'timers');
  t.append(html('tr', {}, ...head.map((x) => html('th', {}, x))));
  v.subtasks.forEach((st, i) => {
    const x = (rs[v.id] || [])[i] || { in: 0, out: 0, busy: 0, idle: 0, bp: 0 };
    const cells = [st.subtask, st.status, fmtNum(x.in), fmtNum(x.out), Math.round(x.busy), Math.round(x.idle), Math.round(x.bp)];
    const row = html('tr', {}, ...cells.map((c) => html('td', {}, c)));
    for (let j = 0; j < n; j++) {
      const td = html('td', {}, fmtWM(st['input-watermarks'][j]));
      if ((st['input-idle'] || [])[j]) td.append(' ', html('span', { class: 'flag' }, 'idle'));
      row.append(td);
    }
    const ops = st.operators;
    row.append(html('td', {}, fmtNum(ops.reduce((a, o) => a + o['late-records-dropped'], 0))));
    row.append(html('td', {}, fmtNum(ops.reduce((a, o) => a + o['state-entries'], 0))));
    row.append(html('td', {}, fmtNum(ops.reduce((a, o) => a + o.timers, 0))));
    t.append(row);
  });
}

function renderState(s) {
  const v = selectedVertex(s);
  const series = [];
  const ops = new Set();
  for (const st of (v ? v.subtasks : [])) for (const op of st.operators) if (op.keyed) ops.add(op.name);
  let k = 0;
  for (const name of ops) {
    const entries = [], timers = [];
    for (const snap of state.snaps) {
      const sv = snap.vertices.find((x) => x.id === v.id);
      if (!sv) continue;
      let e = 0, t = 0;
      for (const st of sv.subtasks) for (const op of st.operators) if (op.name === name) { e += op['state-entries']; t += op.timers; }
      entries.push([snap.timestamp, e]);
      timers.push([snap.timestamp, t]);
    }
    const color = COLORS[k++ % COLORS.length];
    const last = (p) => (p.length ? fmtNum(p[p.length - 1][1]) : '–');
    series.push({ name: `${name}: state entries`, points: entries, color, note: last(entries) });
    series.push({ name: `${name}: timers`, points: timers, color, dashed: true, note: last(timers) });
  }
  if (!series.length) {
    clear($('state-chart')).append(svg('text', { x: 10, y: 20, class: 'muted' }, 'no keyed state in this vertex'));
    clear($('state-legend'));
    return;
  }
  lineChart($('state-chart'), series, (y) => fmtNum(y));
  legend($('state-legend'), series);
}

function renderSkew(s, rs) {
  const el = clear($('skew'));
  const v = selectedVertex(s);
  if (!v) return;
  const list = rs[v.id] || [];
  const maxIn = Math.max(1, ...list.map((r) => r.in));
  const t = html('table', {}, html('tr', {}, html('th', {}, 'subtask'), html('th', {}, 'records in/s'), html('th', {}, '')));
  list.forEach((r, i) => {
    const bar = html('span', { class: 'bar' });
    bar.style.width = Math.round(160 * r.in / maxIn) + 'px';
    t.append(html('tr', {}, html('td', {}, i), html('td', {}, fmtNum(r.in)), html('td', {}, bar)));
  });
  el.append(t);
  let redacted = '';
  for (const ks of v['key-skew'] || []) {
    el.append(html('h3', {}, `Heaviest keys (one record in ${ks.every} sampled, ${fmtNum(ks.sampled)} samples)`));
    const kt = html('table', {}, html('tr', {}, html('th', {}, 'key'), html('th', {}, 'share'), html('th', {}, 'to subtask')));
    for (const k of (ks.keys || []).slice(0, 8)) {
      // Without the token the server redacts key values (rest.WithOpenDetails shows them to all).
      const hidden = k.key.startsWith('redacted: ');
      if (hidden) redacted = k.key;
      kt.append(html('tr', {}, html('td', hidden ? { class: 'muted' } : {}, hidden ? '(redacted)' : k.key), html('td', {}, (100 * k.count / Math.max(ks.sampled, 1)).toFixed(1) + '%'), html('td', {}, k.subtask)));
    }
    el.append(kt);
  }
  if (redacted) el.append(html('p', { class: 'muted' }, 'Key values ' + redacted + '. Enter the token above.'));
  if (!(v['key-skew'] || []).length) el.append(html('p', { class: 'muted' }, 'No keyBy into this vertex.'));
}

function renderCheckpoints(s) {
  const cs = s.checkpoints;
  const c = cs.counts;
  $('checkpoint-counts').textContent = `${c.completed} completed, ${c.failed} failed, ${c.in_progress} in progress, ${c.restored} restored` +
    (s.job.checkpointing ? `; every ${fmtDur(s.job.checkpointing.interval)}` : '; checkpointing is off');
  const t = clear($('checkpoints'));
  t.append(html('tr', {}, ...['id', 'status', 'kind', 'triggered', 'end to end', 'state size', 'persisted in-flight', 'max alignment', 'failure'].map((x) => html('th', {}, x))));
  const names = Object.fromEntries(s.vertices.map((v) => [v.id, v.name]));
  for (const cp of cs.history) {
    let align = 0;
    for (const subs of Object.values(cp.vertices)) for (const sc of subs) align = Math.max(align, sc.alignment || 0);
    // A failed checkpoint has no duration, and says why it failed.
    const failed = cp.status === 'FAILED';
    const dash = () => html('td', { class: 'muted' }, '–');
    const reason = failed ? html('td', { class: 'failure', title: cp.failure || '' }, cp.failure || 'no reason given') : html('td', {}, '');
    const row = html('tr', { class: 'clickable' + (state.checkpoint === cp.id ? ' selected' : '') + (failed ? ' failed' : ''), 'data-status': cp.status, onclick: () => { state.checkpoint = cp.id; renderCheckpoints(latest()); } },
      html('td', {}, cp.id), html('td', {}, cp.status), html('td', {}, cp.savepoint ? 'savepoint' : (cp.unaligned ? 'unaligned' : 'aligned')),
      html('td', {}, new Date(cp['trigger-timestamp']).toLocaleTimeString()),
      failed ? dash() : html('td', {}, fmtDur(Math.max((cp.status === 'IN_PROGRESS' ? Date.now() : cp['latest-ack']) - cp['trigger-timestamp'], 0))),
      failed ? dash() : html('td', {}, fmtBytes(cp['state-size'])), failed ? dash() : html('td', {}, fmtBytes(cp['persisted-data'])),
      failed ? dash() : html('td', {}, fmtDur(align)), reason);
    t.append(row);
  }
  const d = clear($('checkpoint-detail'));
  const cp = cs.history.find((x) => x.id === state.checkpoint) || cs.history.find((x) => x.status === 'COMPLETED');
  if (!cp) return;
  d.append(html('h3', {}, `Checkpoint ${cp.id}: per subtask (bars: alignment, sync, async)`));
  let maxMs = 1;
  for (const subs of Object.values(cp.vertices)) for (const sc of subs) maxMs = Math.max(maxMs, (sc['start-delay'] || 0) + (sc.alignment || 0) + (sc.sync || 0) + (sc.async || 0));
  const dt = html('table', {}, html('tr', {}, ...['vertex', 'subtask', 'acked', 'start delay', 'alignment', 'last barrier', 'sync', 'async', 'state', 'persisted', ''].map((x) => html('th', {}, x))));
  for (const [vid, subs] of Object.entries(cp.vertices)) {
    for (const sc of subs) {
      const bars = html('td', {});
      for (const [cls, ms] of [['align', sc.alignment], ['sync', sc.sync], ['async', sc.async]]) {
        const b = html('span', { class: 'bar ' + cls });
        b.style.width = Math.max(Math.round(200 * (ms || 0) / maxMs), 0) + 'px';
        bars.append(b);
      }
      dt.append(html('tr', {}, html('td', {}, names[vid] || vid), html('td', {}, sc.subtask), html('td', {}, sc.acked ? 'yes' : 'no'),
        html('td', {}, fmtDur(sc['start-delay'] || 0)), html('td', {}, fmtDur(sc.alignment || 0)),
        html('td', {}, sc['last-input'] >= 0 ? `input ${sc['last-input'] + 1}, channel ${sc['last-channel']}` : '–'),
        html('td', {}, fmtDur(sc.sync || 0)), html('td', {}, fmtDur(sc.async || 0)), html('td', {}, fmtBytes(sc['state-size'] || 0)),
        html('td', {}, fmtBytes(sc['persisted-data'] || 0)), bars));
    }
  }
  d.append(dt);
}

function renderExceptions(s) {
  const el = clear($('exceptions'));
  if (!s.exceptions || !s.exceptions.length) { el.append(html('p', { class: 'muted' }, 'None.')); return; }
  for (const x of s.exceptions.slice().reverse()) {
    el.append(html('div', { class: 'finding' }, html('h4', {}, `${new Date(x.timestamp).toLocaleTimeString()} ${x.taskName ? x.taskName + ' (subtask ' + x.subtask + ')' : ''}${x.restarted ? ' — restarted' : ''}`),
      html('pre', {}, x.message + (x.stacktrace ? '\n' + x.stacktrace : ''))));
  }
}

function render() {
  const s = latest();
  if (!s) return;
  const rs = rates(ref(3), s);
  renderHeader(s);
  renderGraph(s, rs);
  renderVertex(s, rs);
  renderState(s);
  renderSkew(s, rs);
  renderCheckpoints(s);
  renderExceptions(s);
}

async function poll() {
  if (state.busy) return;
  state.busy = true;
  try {
    const s = await get(`/weir/jobs/${state.jobId}/snapshot`);
    state.snaps.push(s);
    if (state.snaps.length > state.maxSnaps) state.snaps.shift();
    render();
  } catch (e) {
    $('job-state').textContent = 'unreachable';
  } finally {
    state.busy = false;
  }
}

async function doctor() {
  try {
    const d = await get(`/weir/jobs/${state.jobId}/doctor?samples=30`);
    const el = clear($('doctor'));
    if (!d.findings || !d.findings.length) {
      el.append(html('div', { class: 'healthy' }, `No finding over the last ${d.samples} samples.`));
      return;
    }
    for (const f of d.findings) {
      const ul = html('ul', {}, ...f.evidence.map((e) => html('li', {}, e)));
      el.append(html('div', { class: 'finding', 'data-kind': f.kind }, html('h4', {}, `[${f.kind}] ${f.title}`), ul,
        html('p', {}, html('b', {}, 'Cause: '), f.cause), html('p', {}, html('b', {}, 'Fix: '), f.fix)));
    }
  } catch (e) {
    clear($('doctor')).append(html('p', { class: 'muted' }, 'Doctor unavailable: ' + e.message));
  }
}

function flameGraph(root) {
  const g = clear($('flame'));
  const W = 1200, rowH = 16;
  let depth = 0;
  const walk = (n, d) => { depth = Math.max(depth, d); for (const c of n.children || []) walk(c, d + 1); };
  walk(root, 0);
  depth = Math.min(depth, 60);
  const H = (depth + 1) * rowH;
  g.setAttribute('viewBox', `0 0 ${W} ${H}`);
  g.style.height = Math.min(H, 600) + 'px';
  if (!root.value) {
    g.append(svg('text', { x: 10, y: 14, class: 'muted' }, 'no CPU samples for this vertex'));
    return;
  }
  const draw = (n, x, d) => {
    if (d > depth) return;
    const w = W * n.value / root.value;
    if (w < 0.5) return;
    const hue = 20 + (hash(n.name) % 40);
    const r = svg('rect', { x, y: d * rowH, width: Math.max(w - 0.5, 0.5), height: rowH - 1, fill: `hsl(${hue}, 85%, ${60 + (hash(n.name) % 15)}%)` });
    r.append(svg('title', {}, `${n.name}: ${n.value} samples (${(100 * n.value / root.value).toFixed(1)}%)`));
    g.append(r);
    if (w > 40) {
      const short = n.name.replace(/^.*\//, '');
      g.append(svg('text', { x: x + 3, y: d * rowH + 12 }, short.length * 6.5 > w ? short.slice(0, Math.max(Math.floor(w / 6.5) - 1, 1)) + '…' : short));
    }
    let cx = x;
    for (const c of n.children || []) { draw(c, cx, d + 1); cx += W * c.value / root.value; }
  };
  draw(root, 0, 0);
}

function hash(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return Math.abs(h); }

async function profile() {
  const v = state.selected;
  if (!v) return;
  $('flame-status').textContent = 'profiling…';
  $('flame-button').disabled = true;
  try {
    const fg = await get(`/jobs/${state.jobId}/vertices/${v}/flamegraph?seconds=2`);
    flameGraph(fg.data);
    $('flame-status').textContent = `${fg.data.value} samples, ${new Date(fg.endTimestamp).toLocaleTimeString()}`;
  } catch (e) {
    $('flame-status').textContent = e.message;
  } finally {
    $('flame-button').disabled = false;
  }
}

async function init() {
  $('token').value = localStorage.getItem('weir-token') || '';
  $('token').addEventListener('change', async () => {
    localStorage.setItem('weir-token', token());
    // Key values and exceptions' texts come with the token: reload the history.
    if (state.jobId) { state.snaps = (await get(`/weir/jobs/${state.jobId}/history`)).slice(-state.maxSnaps); render(); }
  });
  $('vertex-select').addEventListener('change', (e) => { state.selected = e.target.value; render(); });
  $('flame-button').addEventListener('click', profile);
  confirmed($('cancel-button'), 'Cancel', cancelJob);
  confirmed($('stop-button'), 'Stop with savepoint', stopWithSavepoint);
  try { state.features = (await get('/config')).features || {}; } catch (e) { state.features = {}; }
  const jobs = await get('/jobs');
  const want = new URLSearchParams(location.hash.slice(1)).get('job');
  // The job asked for (#job=ID-OR-NAME), else a running one (the server
  // keeps showing ended jobs), else the first.
  const job = jobs.jobs.find((j) => j.id === want) || jobs.jobs.find((j) => j.name === want && !TERMINAL.includes(j.status)) ||
    jobs.jobs.find((j) => j.name === want) || jobs.jobs.find((j) => !TERMINAL.includes(j.status)) || jobs.jobs[0];
  if (!job) { $('job-name').textContent = 'no job'; return; }
  state.jobId = job.id;
  state.snaps = (await get(`/weir/jobs/${job.id}/history`)).slice(-state.maxSnaps);
  render();
  await poll();
  doctor();
  setInterval(poll, 1000);
  setInterval(doctor, 3000);
}

init().catch((e) => { $('job-name').textContent = 'error: ' + e.message; });
