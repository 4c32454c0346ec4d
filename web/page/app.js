// Vigil live view: draws what vigil-listen streams over /ws (one JSON update about 10 times a
// second, already decimated and summarised by the server). `window.vigil` holds what the page
// shows, for people with the console open and for the browser test.
'use strict';

const state = window.vigil = {
  connected: false, connections: 0, updates: 0, bytes: 0, firstAt: 0, lastAt: 0, serverMs: 0,
  streams: {}, hits: 0, events: [], alarmsInLog: 0, counters: {}, service: {}, errors: [],
  rig: '', rigs: [],  // vigil-listen --nats: the rig the log shows ('': all) and the fleet's rigs
  aeMaps: {},  // per ae_locate stage: what its map drew (sensors and events with their pixels)
};
let lastEvents = [];
const charts = {};   // stream id -> {card, wave, spec, rms}
let hitsChart = null;
const palette = ['#4fa3ff', '#ffb347', '#5fd38d', '#ff5d5d', '#c792ea', '#f7e463', '#4dd0e1', '#ff8fb1',
                 '#9ccc65', '#ffa07a', '#82aaff', '#e6ee9c', '#b39ddb', '#80cbc4', '#ffcc80', '#ef9a9a'];
const axisStyle = { stroke: '#7f8a9a', grid: { stroke: '#263040', width: 1 }, ticks: { stroke: '#263040' } };
// Y axes: room for "109.25" and "-100", and 4 significant digits (uPlot's own can repeat a label
// when the range is narrow).
const yAxis = Object.assign({}, axisStyle, { size: 56, values: (u, vals) => vals.map(v => String(+v.toPrecision(4))) });

function fmt(v, digits = 3) {
  if (v === undefined || v === null) return '–';
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v)) return v.toLocaleString('en');
  return v.toPrecision(digits);
}

// A chart with a "save PNG" button: the plot's canvas on the page's background.
function makeChart(parent, name, opts, data) {
  const box = document.createElement('div');
  box.className = 'chart';
  parent.appendChild(box);
  const width = Math.max(300, parent.clientWidth - 12);
  const u = new uPlot(Object.assign({ width, height: 150 }, opts), data, box);
  addSaveButton(box, u, name, 'chart');
  return u;
}

// A "save PNG" button on `box` for `what` (a uPlot chart or a canvas), saved as name.png.
function addSaveButton(box, what, name, noun) {
  const button = document.createElement('button');
  button.className = 'save';
  button.textContent = 'save PNG';
  button.title = `save this ${noun} as ${name}.png`;
  button.addEventListener('click', () => savePng(what, name));
  box.appendChild(button);
}

function savePng(u, name) {
  const src = u.ctx ? u.ctx.canvas : u;  // a uPlot chart, or a canvas
  const out = document.createElement('canvas');
  out.width = src.width;
  out.height = src.height;
  const ctx = out.getContext('2d');
  ctx.fillStyle = '#181e27';
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.drawImage(src, 0, 0);
  const a = document.createElement('a');
  a.href = out.toDataURL('image/png');
  a.download = name.replace(/[^A-Za-z0-9_.-]+/g, '_') + '.png';
  document.body.appendChild(a);
  a.click();
  a.remove();
}

function streamCard(s) {
  const card = document.createElement('div');
  card.className = 'card';
  card.dataset.stream = s.id;
  const title = document.createElement('h3');
  title.textContent = s.name;
  const stats = document.createElement('div');
  stats.className = 'stats';
  card.append(title, stats);
  document.getElementById('streams').appendChild(card);
  const line = (label, color, extra) => Object.assign({ label, stroke: color, width: 1 }, extra || {});
  const c = { card, title, stats };
  c.wave = makeChart(card, s.id + '-waveform', {
    title: 'waveform (min/max per point), s before the newest sample',
    scales: { x: { time: false } },
    axes: [axisStyle, yAxis],
    series: [{ label: 's' }, line('min', '#4fa3ff'), line('max', '#4fa3ff')],
    bands: [{ series: [2, 1], fill: 'rgba(79,163,255,0.25)' }],
    legend: { show: false },
  }, [[], [], []]);
  c.spec = makeChart(card, s.id + '-spectrum', {
    title: 'averaged spectrum, dB (0 dB: a sine of amplitude 1), Hz',
    scales: { x: { time: false } },
    axes: [axisStyle, yAxis],
    series: [{ label: 'Hz' }, line('dB', '#ffb347')],
    legend: { show: false },
  }, [[], []]);
  c.rms = makeChart(card, s.id + '-rms', {
    title: 'RMS trend',
    axes: [axisStyle, yAxis],
    series: [{}, line('rms', '#5fd38d'),
             line('threshold', '#ff5d5d', { dash: [6, 4] }), line('clear', '#ffb347', { dash: [2, 4] })],
    legend: { show: false },
  }, [[], [], [], []]);
  return c;
}

function relAxis(n, dt) {
  const x = new Array(n);
  for (let i = 0; i < n; i++) x[i] = -(n - 1 - i) * dt;
  return x;
}

function applyStream(s) {
  const c = charts[s.id] || (charts[s.id] = streamCard(s));
  const st = state.streams[s.id] || (state.streams[s.id] = { id: s.id });
  st.name = s.name;
  st.rate_hz = s.rate_hz;
  if (c.title.textContent !== s.name) c.title.textContent = s.name;
  const stats = s.stats || {};
  st.samples = stats.samples;
  st.gaps = stats.gaps;
  c.stats.textContent = `${s.id} · ${fmt(s.rate_hz)} Hz · ${fmt(stats.samples)} samples · gaps ${fmt(stats.gaps)}` +
    ` · missing ${fmt(stats.missing)}`;
  if (s.wave && s.wave.min.length) {
    c.wave.setData([relAxis(s.wave.min.length, s.wave.dt), s.wave.min, s.wave.max]);
    st.wavePoints = s.wave.min.length;
  }
  if (s.spec && s.spec.db.length) {
    const db = s.spec.db, x = db.map((_, i) => i * s.spec.df);
    c.spec.setData([x, db]);
    let k = 1;
    for (let i = 2; i < db.length; i++) if (db[i] > db[k]) k = i;
    st.peakHz = k * s.spec.df;
    st.peakDb = db[k];
    st.binHz = s.spec.df;
    st.spectra = (st.spectra || 0) + 1;
  }
  if (s.rms && s.rms.v.length) {
    const n = s.rms.v.length, x = new Array(n);
    for (let i = 0; i < n; i++) x[i] = s.rms.t1 - (n - 1 - i) * s.rms.dt;
    const has = s.rms.threshold !== undefined;
    const thr = has ? new Array(n).fill(s.rms.threshold) : new Array(n).fill(null);
    const clr = has ? new Array(n).fill(s.rms.clear_threshold) : new Array(n).fill(null);
    c.rms.setData([x, s.rms.v, thr, clr]);
    st.rms = s.rms.v[n - 1];
    st.threshold = has ? s.rms.threshold : null;
  }
}

function applyHits(h) {
  state.hits = h.t.length;
  document.getElementById('hits-count').textContent = `(${h.t.length} shown)`;
  const channels = Array.from(new Set(h.ch)).sort((a, b) => a - b);
  const order = h.t.map((_, i) => i).sort((a, b) => h.t[a] - h.t[b]);
  const x = order.map(i => h.t[i]);
  const series = channels.map(ch => order.map(i => (h.ch[i] === ch ? h.db[i] : null)));
  const key = channels.join(',');
  if (!hitsChart || hitsChart.key !== key) {
    if (hitsChart) hitsChart.u.destroy(), hitsChart.box.remove();
    const panel = document.getElementById('hits-chart');
    panel.innerHTML = '';
    const u = makeChart(panel, 'ae-hits', {
      title: 'amplitude (dB_AE) at arrival time, per channel',
      axes: [axisStyle, yAxis],
      series: [{}].concat(channels.map((ch, i) => ({
        label: 'ch ' + ch, stroke: palette[i % palette.length], paths: () => null,
        points: { show: true, size: 7, fill: palette[i % palette.length] },
      }))),
    }, [x].concat(series));
    hitsChart = { u, key, box: panel.firstChild };
  } else {
    hitsChart.u.setData([x].concat(series));
  }
}

function applyEvents(all) {
  lastEvents = all;
  const events = state.rig ? all.filter(e => e.rig === state.rig) : all;
  const list = document.getElementById('events');
  list.innerHTML = '';
  let alarms = 0;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    const li = document.createElement('li');
    li.textContent = e.text;
    if (e.alarm) li.className = 'alarm', alarms++;
    list.appendChild(li);
  }
  state.events = events.map(e => e.text);
  state.alarmsInLog = alarms;
}

// vigil-listen --nats: a panel with the rig selector (the event log shows that rig's) and the
// fleet table (a row per rig: last heard from, events, gaps, alarms active; a click selects it).
function applyFleet(fleet) {
  let panel = document.getElementById('fleet-panel');
  if (!panel) {
    panel = document.createElement('div');
    panel.className = 'panel';
    panel.id = 'fleet-panel';
    panel.innerHTML = '<h2>Fleet <select id="rig"><option value="">all rigs</option></select></h2><table id="fleet"></table>';
    document.getElementById('overview').prepend(panel);
    document.getElementById('rig').onchange = (ev) => { state.rig = ev.target.value; applyEvents(lastEvents); };
  }
  const select = document.getElementById('rig');
  for (const r of fleet) {
    if (state.rigs.includes(r.rig)) continue;
    state.rigs.push(r.rig);
    const opt = document.createElement('option');
    opt.value = opt.textContent = r.rig;
    select.appendChild(opt);
  }
  const table = document.getElementById('fleet');
  table.innerHTML = '<tr><th>rig</th><th>last seen</th><th>events</th><th>gaps</th><th>alarms</th></tr>';
  for (const r of fleet) {
    const tr = table.insertRow();
    if (r.alarms_active > 0 || r.gaps > 0) tr.className = 'bad';
    if (r.rig === state.rig) tr.className += ' selected';
    for (const v of [r.rig, fmt(r.last_seen_s_ago) + ' s', fmt(r.events), fmt(r.gaps), fmt(r.alarms_active)])
      tr.insertCell().textContent = v;
    tr.onclick = () => { state.rig = select.value = r.rig; applyEvents(lastEvents); };
  }
}

function applyCounters(counters, service) {
  state.counters = counters;
  state.service = service;
  const web = counters.web || {};
  const seconds = (state.lastAt - state.firstAt) / 1000;
  state.bytesPerSecond = seconds > 0 ? state.bytes / seconds : 0;
  const rows = counters.fleet ? [
    ['messages', counters.messages], ['events', counters.events], ['rigs', counters.fleet.length],
    ['malformed', counters.malformed, counters.malformed > 0],
    ['connection', counters.connection, counters.connection !== 'connected'],
    ['browsers', web.clients], ['updates skipped', web.updates_skipped],
    ['to this page', fmt(state.bytesPerSecond / 1024, 3) + ' KiB/s'],
  ] : [
    ['datagrams', counters.datagrams], ['datagrams/s', counters.datagrams_per_s],
    ['malformed', counters.malformed, counters.malformed > 0],
    ['kernel drops', counters.kernel_drops, counters.kernel_drops > 0],
    ['packet gaps', counters.packet_gaps, counters.packet_gaps > 0],
    ['samples missing', counters.samples_missing, counters.samples_missing > 0],
    ['packets of streams not shown', counters.packets_not_shown, counters.packets_not_shown > 0],
    ['events (seq gaps)', `${fmt(counters.events)} (${fmt(counters.event_gaps)})`, counters.event_gaps > 0],
    ['service chunks in/out', `${fmt(service.chunks_in)} / ${fmt(service.chunks_out)}`],
    ['dropped frames', service.dropped_frames, service.dropped_frames > 0],
    ['deadline misses', service.deadline_misses, service.deadline_misses > 0],
    ['latency p99', service.latency_p99_us === undefined ? '–' : fmt(service.latency_p99_us) + ' µs'],
    ['send errors', service.send_errors, service.send_errors > 0],
    ['backend', service.backend],
    ['browsers', web.clients], ['updates skipped', web.updates_skipped],
    ['to this page', fmt(state.bytesPerSecond / 1024, 3) + ' KiB/s'],
  ];
  const table = document.getElementById('counters');
  table.innerHTML = '';
  for (const [k, v, bad] of rows) {
    const tr = table.insertRow();
    if (bad) tr.className = 'bad';
    tr.insertCell().textContent = k;
    const td = tr.insertCell();
    td.className = 'v';
    td.textContent = typeof v === 'string' ? v : fmt(v);
  }
  document.getElementById('source').textContent = counters.fleet ? `a fleet of ${counters.fleet.length} rigs`
    : service.uptime_s === undefined ? 'no status from vigild yet'
    : `vigild up ${fmt(service.uptime_s, 4)} s`;
}

// AE source location: per ae_locate stage a map of the structure (x right, y up, one scale for
// both): the sensors (numbered by channel), the cluster grid with the cells in alarm filled, and
// the located events coloured by their largest hit amplitude and fading over a minute.
const aeMapCards = {};
const MAP_FADE_S = 60;

function amplitudeColour(db) {  // 40 dB_AE blue ... 70 green ... 100 red
  const f = Math.min(1, Math.max(0, (db - 40) / 60));
  const hue = 220 - 220 * f;
  return `hsl(${hue.toFixed(0)}, 90%, 60%)`;
}

function aeMapCard(m) {
  let card = aeMapCards[m.stage];
  if (card) return card;
  const el = document.createElement('div');
  el.className = 'card ae-map';
  el.dataset.stage = m.stage;
  el.innerHTML = '<h3></h3><div class="chart"></div><div class="legend"></div>';
  el.querySelector('h3').textContent = `AE location · ${m.stage}`;
  const box = el.querySelector('.chart');
  const canvas = document.createElement('canvas');
  box.appendChild(canvas);
  addSaveButton(box, canvas, 'ae-map-' + m.stage, 'map');
  document.getElementById('ae-maps').appendChild(el);
  card = aeMapCards[m.stage] = { el, canvas };
  return card;
}

function drawAeMap(m) {
  const card = aeMapCard(m);
  const canvas = card.canvas;
  const width = Math.max(300, card.el.clientWidth - 12), height = 320;
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(width * dpr)) {
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = width + 'px';
    canvas.style.height = height + 'px';
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = '#181e27';
  ctx.fillRect(0, 0, width, height);
  // The view: the sensors' extent (else the events'), a fifth of it around, one scale for x and y.
  const pts = m.sensors.length ? m.sensors : m.events.x.map((x, i) => [x, m.events.y[i]]);
  if (!pts.length) return;
  let x0 = Math.min(...pts.map(p => p[0])), x1 = Math.max(...pts.map(p => p[0]));
  let y0 = Math.min(...pts.map(p => p[1])), y1 = Math.max(...pts.map(p => p[1]));
  const span = Math.max(x1 - x0, y1 - y0, 1e-3);
  x0 -= span * 0.2; x1 += span * 0.2; y0 -= span * 0.2; y1 += span * 0.2;
  const pad = 24;
  const scale = Math.min((width - 2 * pad) / (x1 - x0), (height - 2 * pad) / (y1 - y0));
  const ox = (width - scale * (x1 - x0)) / 2, oy = (height - scale * (y1 - y0)) / 2;
  const px = x => ox + (x - x0) * scale, py = y => height - oy - (y - y0) * scale;
  const drawn = { scale, sensors: [], events: [], cells: [] };
  // The cluster grid (where its lines are at least 6 px apart) and the cells in alarm.
  if (m.cell_m > 0) {
    for (const [i, j, level] of m.alarm_cells) {
      ctx.fillStyle = level === 'danger' ? 'rgba(255, 60, 60, 0.55)' : 'rgba(255, 93, 93, 0.32)';
      ctx.fillRect(px(i * m.cell_m), py((j + 1) * m.cell_m), m.cell_m * scale, m.cell_m * scale);
      drawn.cells.push({ i, j, level });
    }
    if (m.cell_m * scale >= 6) {
      ctx.strokeStyle = '#222a36';
      ctx.lineWidth = 1;
      ctx.beginPath();
      for (let k = Math.ceil(x0 / m.cell_m); k * m.cell_m <= x1; k++) {
        ctx.moveTo(px(k * m.cell_m), py(y0)); ctx.lineTo(px(k * m.cell_m), py(y1));
      }
      for (let k = Math.ceil(y0 / m.cell_m); k * m.cell_m <= y1; k++) {
        ctx.moveTo(px(x0), py(k * m.cell_m)); ctx.lineTo(px(x1), py(k * m.cell_m));
      }
      ctx.stroke();
    }
  }
  // The array's outline: the sensors in channel order (a plate's corners, a pipe's line).
  if (m.sensors.length > 1) {
    ctx.strokeStyle = '#3a4658';
    ctx.beginPath();
    m.sensors.forEach((s, c) => (c ? ctx.lineTo(px(s[0]), py(s[1])) : ctx.moveTo(px(s[0]), py(s[1]))));
    if (m.location !== 'linear') ctx.closePath();
    ctx.stroke();
  }
  // Events, oldest first so the newest lie on top.
  const n = m.events.x.length;
  for (let k = 0; k < n; k++) {
    const age = m.events.age_s[k];
    const alpha = Math.max(0.12, 1 - age / MAP_FADE_S);
    const ex = px(m.events.x[k]), ey = py(m.events.y[k]);
    if (ex < 0 || ey < 0 || ex > width || ey > height) continue;  // far outside the array
    ctx.globalAlpha = alpha;
    ctx.fillStyle = amplitudeColour(m.events.db[k]);
    ctx.beginPath();
    ctx.arc(ex, ey, 4, 0, 2 * Math.PI);
    ctx.fill();
    drawn.events.push({ x: m.events.x[k], y: m.events.y[k], db: m.events.db[k], age, px: ex, py: ey });
  }
  ctx.globalAlpha = 1;
  // The cells in alarm outlined over their events, so that a cell under its own dots still shows.
  ctx.strokeStyle = '#ff5d5d';
  ctx.lineWidth = 2;
  for (const [i, j] of m.cell_m > 0 ? m.alarm_cells : [])
    ctx.strokeRect(px(i * m.cell_m) - 1, py((j + 1) * m.cell_m) - 1, m.cell_m * scale + 2, m.cell_m * scale + 2);
  ctx.lineWidth = 1;
  ctx.font = '11px system-ui, sans-serif';
  m.sensors.forEach((s, c) => {
    const sx = px(s[0]), sy = py(s[1]);
    ctx.fillStyle = '#d8dee9';
    ctx.fillRect(sx - 5, sy - 5, 10, 10);
    ctx.fillStyle = '#10141a';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillText(String(c), sx, sy + 0.5);
    drawn.sensors.push({ x: s[0], y: s[1], px: sx, py: sy });
  });
  ctx.fillStyle = '#7f8a9a';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'alphabetic';
  const metres = Math.pow(10, Math.floor(Math.log10(span / 2)));
  ctx.fillRect(pad, height - 10, metres * scale, 2);
  ctx.fillText(`${metres} m`, pad + metres * scale + 6, height - 6);
  card.el.querySelector('.legend').textContent =
    `${m.located} located, ${m.not_located} not located; colour: amplitude 40 (blue) to 100 dB_AE (red); ` +
    `fading over ${MAP_FADE_S} s` + (m.cell_m > 0 ? `; grid ${m.cell_m} m, ${m.alarm_cells.length} cells in alarm` : '');
  state.aeMaps[m.stage] = Object.assign(drawn, { located: m.located, notLocated: m.not_located, width, height });
}

function apply(u) {
  for (const s of u.streams) applyStream(s);
  applyHits(u.hits);
  for (const m of u.ae_maps || []) drawAeMap(m);
  if (u.counters.fleet) applyFleet(u.counters.fleet);
  applyEvents(u.events);
  applyCounters(u.counters, u.service);
}

function connect() {
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
  const pill = document.getElementById('connection');
  ws.onopen = () => {
    state.connected = true;
    state.connections++;
    pill.textContent = 'receiving';
    pill.className = 'pill on';
  };
  ws.onmessage = (m) => {
    const now = performance.now();
    if (!state.firstAt) state.firstAt = now;
    state.lastAt = now;
    state.bytes += m.data.length;
    try {
      const u = JSON.parse(m.data);
      apply(u);
      state.updates++;
      state.serverMs = u.counters.uptime_ms;
    } catch (e) {
      state.errors.push(String(e && e.stack || e));
    }
  };
  ws.onclose = () => {
    state.connected = false;
    pill.textContent = 'disconnected: retrying';
    pill.className = 'pill off';
    setTimeout(connect, 1000);
  };
}

connect();
