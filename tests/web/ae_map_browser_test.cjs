// The web view's AE location map in a real browser (issue 52): runs vigild with a synthetic plate
// (4 sensors at the corners of a 1 m square, a crack planted at (0.63 m, 0.37 m) emitting five
// times a second), an ae_hits and an ae_locate stage with a cluster alarm, and `vigil-listen
// --web`; opens the page in headless Chromium and asserts from the page's state and its pixels:
// the sensors drawn where they are (one scale for x and y, y up), the located events drawn at the
// positions the events carry (all at the crack), coloured where they are drawn, the crack's
// cluster cell shown in alarm, and the map saved as PNG. Leaves a screenshot in the output folder.
// Usage: node ae_map_browser_test.cjs --bin BUILD/apps --out DIR --npm BUILD/web-npm
// Exit 0: passed; 1: failed; 77: skipped (no Chromium on this machine), with the reason.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const { setUp, checks, freeUdpPort, startListener, savePng, run } = require('./browser_support.cjs');
const { binDir, outDir, chromium, chromiumPath } = setUp();
const { check, failures } = checks();

const CRACK = [0.63, 0.37];
const SENSORS = [[0, 0], [1, 0], [1, 1], [0, 1]];

function config(eventPort) {
  return `source:
  kind: synthetic
  rate_hz: 500000
  channels: 4
  format: int16
  chunk_frames: 8192
  seed: 3
  rate_factor: 1
  duration_s: 60
  signals:
    - noise_rms: 0.0003
  ae_sources:
    geometry: &plate
      kind: planar
      velocity_m_s: 3000
      sensors: [${SENSORS.map(s => `{x_m: ${s[0]}, y_m: ${s[1]}}`).join(', ')}]
      event_lockout_s: 0.001
      cluster_cell_m: 0.05
    attenuation_db_m: 10
    burst: {freq_hz: 100000, rise_s: 0.000002, decay_s: 0.00005}
    sources:
      - {x_m: ${CRACK[0]}, y_m: ${CRACK[1]}, amplitude: 0.3, rate_hz: 5}
stages:
  - {name: hits, kind: ae_hits, input: input, threshold_db: 70, full_scale_v: 1, preamp_gain_db: 0, hdt_us: 200, hlt_us: 1000, level_interval_s: 0}
  - name: plate
    kind: ae_locate
    input: hits
    geometry: *plate
    cluster_alarm: {window_s: 4, alert: 1}
outputs:
  - {kind: events, destination: "127.0.0.1:${eventPort}", status_interval_s: 0.5}
`;
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-map-'));
  const eventPort = await freeUdpPort();
  const cfg = path.join(tmp, 'vigil.yaml');
  fs.writeFileSync(cfg, config(eventPort));
  const listenLog = path.join(outDir, 'vigil-listen.log'), vigildLog = path.join(outDir, 'vigild.log');
  fs.writeFileSync(listenLog, '');
  fs.writeFileSync(vigildLog, '');
  const listener = await startListener(binDir,
    ['--web', '127.0.0.1:0', '--data-port', '0', '--event-port', String(eventPort), '--quiet'], listenLog);
  const vigild = spawn(path.join(binDir, 'vigild'), ['--config', cfg, '--log-interval', '0']);
  vigild.stderr.on('data', d => fs.appendFileSync(vigildLog, d));
  const browser = await chromium.launch({
    executablePath: chromiumPath, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1500, height: 1000 } });
    const page = await context.newPage();
    const pageErrors = [];
    page.on('pageerror', e => pageErrors.push(String(e)));
    await page.goto(listener.url);
    // Enough events for the alarm (1 a second over 4 s) and its cell drawn.
    await page.waitForFunction(() => {
      const m = window.vigil.aeMaps.plate;
      return m && m.events.length >= 6 && m.cells.length > 0;
    }, null, { timeout: 60000, polling: 200 });
    const m = await page.evaluate(() => JSON.parse(JSON.stringify(window.vigil.aeMaps.plate)));

    // Sensors: all four, where they are: one scale for x and y, y up.
    check(m.sensors.length === 4, `4 sensors drawn: ${m.sensors.length}`);
    const s = m.sensors;
    const close = (a, b, tol) => Math.abs(a - b) <= tol;
    check(s.every((p, c) => p.x === SENSORS[c][0] && p.y === SENSORS[c][1]), 'the sensors at the layout\'s positions');
    check(close(s[1].px - s[0].px, m.scale, 0.01) && close(s[0].py - s[3].py, m.scale, 0.01) &&
          close(s[2].px, s[1].px, 0.01) && close(s[2].py, s[3].py, 0.01),
      `a square of ${m.scale.toFixed(1)} px a metre, x right and y up: ` +
      s.map(p => `(${p.px.toFixed(1)}, ${p.py.toFixed(1)})`).join(' '));
    // Events: at the crack (within 10 mm: the bursts' threshold crossings), drawn at their positions.
    const off = m.events.map(e => Math.hypot(e.x - CRACK[0], e.y - CRACK[1]));
    check(off.every(d => d <= 0.01), `${m.events.length} events at the crack, the farthest ${(Math.max(...off) * 1e3).toFixed(1)} mm off`);
    check(m.events.every(e => close(e.px, s[0].px + e.x * m.scale, 0.01) && close(e.py, s[0].py - e.y * m.scale, 0.01)),
      'each event drawn at its own x and y');
    check(m.events.every(e => e.age >= 0 && e.age < 60 && e.db > 70), 'events fresh, their amplitudes above the threshold');
    // Pixels: an event's colour where it is drawn, a sensor's square.
    const pixels = await page.evaluate(([e, sensor]) => {
      const c = document.querySelector('.ae-map[data-stage="plate"] canvas');
      const ctx = c.getContext('2d');
      const dpr = c.width / c.getBoundingClientRect().width;
      const at = (x, y) => Array.from(ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data);
      return { event: at(e.px, e.py), sensor: at(sensor.px + 4, sensor.py - 4) };  // the square's corner, past its number
    }, [m.events[m.events.length - 1], s[0]]);
    const bg = [0x18, 0x1e, 0x27];
    const differs = (p) => Math.abs(p[0] - bg[0]) + Math.abs(p[1] - bg[1]) + Math.abs(p[2] - bg[2]) > 60;
    check(differs(pixels.event), `the newest event coloured where it is drawn: rgb(${pixels.event.slice(0, 3)})`);
    check(pixels.sensor[0] > 180 && pixels.sensor[1] > 180, `sensor 0 drawn as a light square: rgb(${pixels.sensor.slice(0, 3)})`);
    // The crack's cell (x 0.60-0.65, y 0.35-0.40) in alarm.
    check(m.cells.some(c => c.i === 12 && c.j === 7 && c.level === 'alert'), `the crack's cell in alarm: ${JSON.stringify(m.cells)}`);
    check(m.cells.length === 1, 'no other cell in alarm');
    const legend = await page.$eval('.ae-map[data-stage="plate"] .legend', el => el.textContent);
    check(/located/.test(legend) && /1 cells in alarm/.test(legend), `legend: ${legend}`);
    const alarms = await page.$$eval('#events li.alarm', lis => lis.map(li => li.textContent));
    check(alarms.some(t => t.includes('plate raised (alert) cluster at x 0.6250 m, y 0.3750 m')),
      `the cluster alarm in the event log: ${alarms[0]}`);
    check(pageErrors.length === 0, `no script error ${pageErrors.join(' ')}`);

    const png = await savePng(page, '.ae-map[data-stage="plate"] button.save', outDir);
    check(png.name === 'ae-map-plate.png' && png.bytes.length > 2000 &&
          png.bytes.subarray(1, 4).toString() === 'PNG', `"save PNG" saved ${png.name} (${png.bytes.length} bytes)`);
    const card = await page.$('.ae-map[data-stage="plate"]');
    await card.screenshot({ path: path.join(outDir, 'ae-map.png') });
    console.log('screenshot: ' + path.join(outDir, 'ae-map.png'));
  } finally {
    await browser.close();
    vigild.kill('SIGTERM');
    listener.proc.kill('SIGTERM');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

run(main, failures, outDir);
