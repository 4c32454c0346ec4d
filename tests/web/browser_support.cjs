// What the web view's browser tests share: their arguments, Chromium (Debian's, driven by
// playwright-core from web/package-lock.json; exit 77, a skip, where there is none), the checks'
// tally, a sleep, a free UDP port, vigil-listen started with its web view, a chart's "save PNG"
// download, and the run's verdict.
'use strict';
const { spawn } = require('child_process');
const dgram = require('dgram');
const fs = require('fs');
const path = require('path');

const arg = (name) => {
  const i = process.argv.indexOf('--' + name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error('missing --' + name);
  return process.argv[i + 1];
};

// { binDir, outDir, chromium, chromiumPath } from --bin, --out, --npm; exits 77 without Chromium.
function setUp() {
  const binDir = path.resolve(arg('bin')), outDir = path.resolve(arg('out')), npmDir = path.resolve(arg('npm'));
  const chromiumPath = [process.env.VIGIL_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser']
    .find(p => p && fs.existsSync(p));
  if (!chromiumPath) {
    console.log('SKIP: no Chromium here (apt-get install chromium; or set VIGIL_CHROMIUM)');
    process.exit(77);
  }
  const { chromium } = require(path.join(npmDir, 'node_modules', 'playwright-core'));
  return { binDir, outDir, chromium, chromiumPath };
}

// check(ok, what) prints and remembers; failures lists what failed.
function checks() {
  const failures = [];
  const check = (ok, what) => {
    console.log((ok ? 'ok    ' : 'FAIL  ') + what);
    if (!ok) failures.push(what);
  };
  return { check, failures };
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

function freeUdpPort() {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket('udp4');
    s.on('error', reject);
    s.bind(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

// Starts binDir/vigil-listen with `args` (its --web among them), its stderr appended to `log`;
// resolves with { proc, url } from the line that names the web view.
function startListener(binDir, args, log, timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    const p = spawn(path.join(binDir, 'vigil-listen'), args);
    let err = '';
    const timer = setTimeout(() => reject(new Error('vigil-listen printed no URL: ' + err)), timeoutMs);
    p.stderr.on('data', d => {
      err += d;
      fs.appendFileSync(log, d);
      const m = /web view on (http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve({ proc: p, url: m[1] });
      }
    });
    p.on('exit', code => reject(new Error('vigil-listen exited ' + code + ': ' + err)));
  });
}

// Clicks the "save PNG" button at `selector` and saves the download in outDir: { name, bytes }.
async function savePng(page, selector, outDir) {
  const [download] = await Promise.all([
    page.waitForEvent('download', { timeout: 10000 }),
    page.click(selector),
  ]);
  const file = path.join(outDir, download.suggestedFilename());
  await download.saveAs(file);
  return { name: download.suggestedFilename(), bytes: fs.readFileSync(file) };
}

// Runs the test's main(): exit 0 when every check passed, 1 when one failed or main threw.
function run(main, failures, outDir) {
  main().then(() => {
    if (failures.length) {
      console.log(`${failures.length} check(s) failed; logs in ${outDir}`);
      process.exit(1);
    }
    console.log('all checks passed');
  }).catch(e => {
    console.log('FAIL  ' + (e && e.stack || e));
    process.exit(1);
  });
}

module.exports = { setUp, checks, sleep, freeUdpPort, startListener, savePng, run };
