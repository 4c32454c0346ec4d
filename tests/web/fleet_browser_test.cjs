// The web view of a fleet in a real browser (issue 49): a nats-server with JetStream on loopback,
// two vigild rigs (r1, r2) publishing to it, `vigil-listen --nats URL --web`, the page in headless
// Chromium: both rigs in the fleet table and the rig selector, their alarms counted, and the rig
// selector showing only the chosen rig's events. Leaves a screenshot in the output folder.
// Usage: node fleet_browser_test.cjs --bin BUILD/apps --out DIR --npm BUILD/web-npm
// Exit 0: passed; 1: failed (also without nats-server); 77: skipped (no Chromium here), with the reason.
'use strict';
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');

const { setUp, checks, sleep, startListener, run } = require('./browser_support.cjs');
const { binDir, outDir, chromium, chromiumPath } = setUp();
let natsServer = '';
try {
  natsServer = execFileSync('/bin/sh', ['-c', 'command -v nats-server'], { encoding: 'utf8' }).trim();
} catch (e) { /* below */ }
if (!natsServer) {  // a test dependency (scripts/deps-debian.txt), not an optional one: a failure
  console.log('FAIL  no nats-server here (scripts/install-deps.sh installs it: apt-get install nats-server)');
  process.exit(1);
}
const { check, failures } = checks();

function freeTcpPort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

// A rig whose band alarm on channel 0 rises and clears every second (a sine switched on and off).
function config(rig, natsUrl) {
  return `source:
  kind: synthetic
  rate_hz: 51200
  channels: 2
  chunk_frames: 1024
  seed: 3
  rate_factor: 1
  duration_s: 60
  signals:
    - noise_rms: 0.01
      bursts: {amplitude: 0.5, freq_hz: 3000, rise_s: 0.001, decay_s: 0.2, rate_hz: 1}
    - noise_rms: 0.01
stages:
  - {name: bands, kind: fir_bank, input: input, taps: 127, crossover_hz: [1000, 5000]}
  - {name: band_alarm, kind: band_rms, input: bands, window_s: 0.05, threshold: 0.07, clear_threshold: 0.05}
outputs:
  - kind: nats
    servers: ["${natsUrl}"]
    rig: ${rig}
    status_interval_s: 0.5
`;
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vigil-fleet-web-'));
  const port = await freeTcpPort();
  const natsUrl = `nats://127.0.0.1:${port}`;
  const nats = spawn(natsServer, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', path.join(tmp, 'store')]);
  nats.stderr.on('data', d => fs.appendFileSync(path.join(outDir, 'nats-server.log'), d));
  const procs = [nats];
  let browser = null;
  try {
    for (let i = 0; i < 100; i++) {  // until it takes connections
      const up = await new Promise(r => {
        const c = net.connect(port, '127.0.0.1', () => { c.end(); r(true); });
        c.on('error', () => r(false));
      });
      if (up) break;
      await sleep(100);
    }
    for (const rig of ['r1', 'r2']) {
      const cfg = path.join(tmp, rig + '.yaml');
      fs.writeFileSync(cfg, config(rig, natsUrl));
      const v = spawn(path.join(binDir, 'vigild'), ['--config', cfg, '--log-interval', '0']);
      v.stderr.on('data', d => fs.appendFileSync(path.join(outDir, rig + '.log'), d));
      procs.push(v);
    }
    await sleep(1500);  // the rigs make their stream first
    const listenLog = path.join(outDir, 'vigil-listen.log');
    fs.writeFileSync(listenLog, '');
    const listener = await startListener(binDir,
      ['--nats', natsUrl, '--web', '127.0.0.1:0', '--quiet', '--durable', 'browser' + process.pid], listenLog, 15000);
    procs.push(listener.proc);
    browser = await chromium.launch({
      executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    const page = await (await browser.newContext({ viewport: { width: 1500, height: 900 } })).newPage();
    const pageErrors = [];
    page.on('pageerror', e => pageErrors.push(String(e)));
    await page.goto(listener.url);
    // Both rigs, each with events and an alarm raised at some time.
    await page.waitForFunction(() => {
      const v = window.vigil;
      return v.rigs.length === 2 && (v.counters.fleet || []).every(r => r.events > 5) && v.alarmsInLog > 0;
    }, null, { timeout: 40000, polling: 200 });
    const rows = await page.$$eval('#fleet tr', trs => trs.slice(1).map(tr => [...tr.cells].map(c => c.textContent)));
    check(rows.length === 2 && rows[0][0] === 'r1' && rows[1][0] === 'r2', `the fleet table has both rigs: ${JSON.stringify(rows)}`);
    const options = await page.$$eval('#rig option', os => os.map(o => o.value));
    check(JSON.stringify(options) === JSON.stringify(['', 'r1', 'r2']), `the rig selector offers all, r1, r2: ${options}`);
    const all = await page.$$eval('#events li', lis => lis.map(li => li.textContent));
    check(all.some(t => t.startsWith('[r1] ')) && all.some(t => t.startsWith('[r2] ')),
      `the log shows both rigs' events (${all.length} lines)`);
    await page.selectOption('#rig', 'r2');
    await sleep(400);  // an update or more
    const only = await page.$$eval('#events li', lis => lis.map(li => li.textContent));
    check(only.length > 0 && only.every(t => t.startsWith('[r2] ')), `with r2 chosen, only r2's events: ${only.length} lines`);
    const fleet = await page.evaluate(() => window.vigil.counters.fleet);
    check(fleet.every(r => r.gaps === 0), `no gap in either rig: ${JSON.stringify(fleet.map(r => [r.rig, r.gaps]))}`);
    check(fleet.every(r => r.last_seen_s_ago < 5), 'both rigs heard from within 5 s');
    check(pageErrors.length === 0, `no script error ${pageErrors.join(' ')}`);
    await page.screenshot({ path: path.join(outDir, 'fleet-view.png') });
    console.log('screenshot: ' + path.join(outDir, 'fleet-view.png'));
  } finally {
    if (browser) await browser.close();
    for (const p of procs.reverse()) p.kill('SIGTERM');
    await sleep(500);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

run(main, failures, outDir);
