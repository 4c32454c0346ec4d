// The web view in a real browser (issue 10): runs vigild (a synthetic source with a known sine and
// planted AE bursts) and `vigil-listen --web` on loopback, opens the page in headless Chromium
// (Debian's, driven by playwright-core from web/package-lock.json) in two tabs, and asserts from
// the page's state: every stream shown, the spectrum's peak within one bin of the sine, the alarm
// in the event log, AE hits drawn, counters advancing, at most 1 MB/s, nothing loaded from
// elsewhere, and a chart saved as PNG. Leaves a screenshot in the output folder.
// Usage: node browser_test.cjs --bin BUILD/apps --out DIR --npm BUILD/web-npm
// Exit 0: passed; 1: failed; 77: skipped (no Chromium on this machine), with the reason.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const { setUp, checks, sleep, freeUdpPort, startListener, savePng, run } = require('./browser_support.cjs');
const { binDir, outDir, chromium, chromiumPath } = setUp();

const SINE_HZ = 3000, RATE = 51200;
const { check, failures } = checks();

function config(dataPort, eventPort) {
  const times = [];
  for (let t = 0.5; t < 60; t += 0.5) times.push(t.toFixed(1));
  return `source:
  kind: synthetic
  rate_hz: ${RATE}
  channels: 2
  format: int16
  chunk_frames: 1024
  seed: 7
  rate_factor: 1
  duration_s: 60
  signals:
    - sines: [{freq_hz: ${SINE_HZ}, amplitude: 0.15}]
      noise_rms: 0.01
    - noise_rms: 0.01
      bursts: {amplitude: 0.3, freq_hz: 12000, decay_s: 0.005, times_s: [${times.join(', ')}]}
stages:
  - {name: bands, kind: fir_bank, input: input, taps: 255, crossover_hz: [1000, 5000], band_names: [low, mid, high]}
  - {name: band_alarm, kind: band_rms, input: bands, window_s: 0.05, threshold: 0.07, clear_threshold: 0.05}
  - {name: ae, kind: ae_hits, input: input, threshold_db: 106, full_scale_v: 1, preamp_gain_db: 0, hdt_us: 2000, hlt_us: 5000}
outputs:
  - {kind: vita49, stream: input, destination: "127.0.0.1:${dataPort}"}
  - {kind: vita49, stream: bands, destination: "127.0.0.1:${dataPort}"}
  - {kind: events, destination: "127.0.0.1:${eventPort}", status_interval_s: 0.5}
`;
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-web-'));
  const dataPort = await freeUdpPort(), eventPort = await freeUdpPort();
  const cfg = path.join(tmp, 'vigil.yaml');
  fs.writeFileSync(cfg, config(dataPort, eventPort));
  const listenLog = path.join(outDir, 'vigil-listen.log'), vigildLog = path.join(outDir, 'vigild.log');
  fs.writeFileSync(listenLog, '');
  const listener = await startListener(binDir,
    ['--web', '127.0.0.1:0', '--data-port', String(dataPort), '--event-port', String(eventPort), '--quiet'], listenLog);
  const vigild = spawn(path.join(binDir, 'vigild'), ['--config', cfg, '--log-interval', '0']);
  vigild.stderr.on('data', d => fs.appendFileSync(vigildLog, d));
  const origin = new URL(listener.url).origin;
  const browser = await chromium.launch({
    executablePath: chromiumPath, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1500, height: 1000 } });
    const urls = [], pageErrors = [];
    const open = async () => {
      const page = await context.newPage();
      page.on('request', r => urls.push(r.url()));
      page.on('websocket', w => urls.push(w.url()));
      page.on('pageerror', e => pageErrors.push(String(e)));
      await page.goto(listener.url);
      return page;
    };
    const page = await open(), second = await open();
    const expected = [];
    for (const ch of [0, 1]) {
      expected.push('0000000' + ch);
      for (const band of [0, 1, 2]) expected.push('0100' + band + '00' + ch);
    }
    expected.sort();
    // Data, a spectrum for every stream, a hit, the alarm: then look.
    await page.waitForFunction((n) => {
      const v = window.vigil;
      const ids = Object.keys(v.streams);
      return v.updates > 10 && ids.length === n && ids.every(id => v.streams[id].spectra > 0) &&
        v.hits > 0 && v.alarmsInLog > 0;
    }, expected.length, { timeout: 40000, polling: 200 });
    const state = () => page.evaluate(() => JSON.parse(JSON.stringify(Object.assign({}, window.vigil,
      { now: performance.now() }))));
    const a = await state();
    await sleep(4000);
    const b = await state();

    const shown = await page.$$eval('#streams .card[data-stream]', cards => cards.map(c => ({
      id: c.dataset.stream, title: c.querySelector('h3').textContent, canvases: c.querySelectorAll('canvas').length,
    })));
    check(JSON.stringify(shown.map(s => s.id).sort()) === JSON.stringify(expected),
      `every stream shown: ${shown.map(s => s.id).sort().join(' ')}`);
    check(shown.every(s => s.canvases >= 3), 'each stream card draws waveform, spectrum and RMS trend');
    check(shown.some(s => s.title === 'bands / mid · ch 0'), 'streams named from the layout (bands / mid · ch 0)');
    for (const id of ['00000000', '01001000']) {
      const s = b.streams[id];
      check(s && Math.abs(s.peakHz - SINE_HZ) <= s.binHz,
        `stream ${id}: spectrum peak ${s && s.peakHz} Hz within one bin (${s && s.binHz} Hz) of the ${SINE_HZ} Hz sine`);
    }
    check(b.streams['01001000'].threshold === 0.07, 'the band_rms threshold drawn on the mid band\'s RMS trend');
    const alarms = await page.$$eval('#events li.alarm', lis => lis.map(li => li.textContent));
    check(alarms.some(t => t.includes('band_alarm raised') && t.includes("'mid' channel 0")),
      `the alarm in the event log: ${alarms[0]}`);
    check(b.hits > 0, `AE hits drawn: ${b.hits}`);
    check(b.counters.datagrams > a.counters.datagrams, `counters advance: datagrams ${a.counters.datagrams} -> ${b.counters.datagrams}`);
    check(b.service.chunks_in > a.service.chunks_in, `service counters advance: chunks in ${a.service.chunks_in} -> ${b.service.chunks_in}`);
    // On vigil-listen's clock (each update's uptime_ms): a page that fell behind on a busy machine
    // and catches up receives faster than it was sent to.
    const seconds = (b.serverMs - a.serverMs) / 1000;
    const ups = (b.updates - a.updates) / seconds, rate = (b.bytes - a.bytes) / seconds;
    console.log(`measured: ${ups.toFixed(1)} updates/s, ${(rate / 1000).toFixed(0)} kB/s to one page over ${seconds.toFixed(1)} s`);
    check(ups >= 8, `about 10 updates per second: ${ups.toFixed(1)}`);
    check(rate <= 1.0e6, `at most 1 MB/s to a page: ${(rate / 1e6).toFixed(3)} MB/s`);
    const other = await second.evaluate(() => ({ updates: window.vigil.updates, streams: Object.keys(window.vigil.streams).length }));
    check(other.updates > 10 && other.streams === expected.length, `a second browser at once: ${other.updates} updates, ${other.streams} streams`);
    check(b.counters.web.clients >= 2, `the server counts ${b.counters.web.clients} browsers`);
    const foreign = urls.filter(u => !u.startsWith(origin + '/') && !u.startsWith(origin.replace('http:', 'ws:') + '/'));
    check(foreign.length === 0, `nothing loaded from elsewhere (${urls.length} requests${foreign.length ? ': ' + foreign.join(' ') : ''})`);
    check(pageErrors.length === 0 && b.errors.length === 0, `no script error ${pageErrors.concat(b.errors).join(' ')}`);

    const png = await savePng(page, '.card[data-stream="00000000"] button.save[title*="spectrum"]', outDir);
    check(png.bytes.length > 2000 && png.bytes.subarray(1, 4).toString() === 'PNG',
      `"save PNG" saved ${png.name} (${png.bytes.length} bytes)`);
    await page.screenshot({ path: path.join(outDir, 'web-view.png'), fullPage: true });
    await page.screenshot({ path: path.join(outDir, 'web-view-top.png') });  // the README's picture
    console.log('screenshot: ' + path.join(outDir, 'web-view.png'));
  } finally {
    await browser.close();
    vigild.kill('SIGTERM');
    listener.proc.kill('SIGTERM');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

run(main, failures, outDir);
