// trace-browser.mjs VIEWER_DIR VIEW.html TRACE.json[.gz] SHOT.png NAME... : open a
// Chrome trace-event file written by `gpuprof trace --format chrome` in a
// real viewer, speedscope (npm, offline), in headless Chromium, the way a
// person does: the page `gpuprof view` wrote (speedscope's app,
// self-contained, showing its embedded profile) is opened from disk and
// the trace is given to speedscope's own "Import" button (its file
// chooser: the browser reads the file; nothing is copied into the page),
// so that speedscope's Chrome trace importer reads the file.  Checks: no
// error panel, no import alert, every NAME (a thread / stream track name)
// is among speedscope's profiles, stepped through with its 'n' key, and
// the profile of the last NAME is drawn.
//
// The picture that profile must give is known before the browser starts:
// it is computed from the trace file (the track's slices, the share of its
// time range they cover; speedscope shows each profile over its own
// range), and the run's workload makes it mostly covered (ocl-gap's 300 ms
// cpu_think gap on the idle track): a track covering less than half its
// range fails as a bad input, not as a bad viewer.  "Drawn" is a pixel
// count that does not depend on the colour speedscope happens to pick
// (pixels.mjs: a third of its palette is pale).  A synthetic trace
// imported into the same page afterwards keeps the count honest: one long
// frame given a pale colour must count as drawn, and two 1 us slices 300
// ms apart (a nearly empty chart) must not.  On failure the evidence is
// printed (drawn and vivid pixel shares, the slices' share of the range,
// the long frame's colour rank).  Saves a screenshot of the last NAME's
// profile.  Prints the import's wall time (file chosen to profiles
// listed).  Exits 0, 1 with the reason, 77 without Chromium.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';

import { pct, waitDrawn, waitShare } from '../export/pixels.mjs';

const [viewer, view, trace, shot, ...names] = process.argv.slice(2);
const { chromium } = createRequire(resolve(viewer) + '/')('playwright-core');
const exe = [process.env.CHROMIUM, '/usr/lib/chromium/chromium', '/usr/bin/chromium']
  .find((p) => p && existsSync(p));
if (!exe) {
  console.log('SKIP: no chromium');
  process.exit(77);
}
const W = 1200, H = 700;
const MIN_DRAWN = 0.02;  // share of the chart area a mostly covered track draws (~13 %)
const WAIT_MS = 20000;   // speedscope's redraw on a loaded machine
// loading and importing the trace (TRACE_BROWSER_LOAD_MS: a 1 M-event trace
// takes minutes, bench/trace-browser-big.sh)
const LOAD_MS = Number(process.env.TRACE_BROWSER_LOAD_MS) || 60000;
const fail = (why) => { console.error(`FAIL: ${why}`); process.exitCode = 1; };

// ---------------------------------------------------- the known picture
// speedscope's frame key (chrome importer: name + ' ' + JSON of args) and
// colour: rank r of n frames sorted by key -> bucket t = floor(255 r / n)
// / 255, chroma 0.25 + 0.2 * triangle(30 t) (theme colorForBucket), in
// 0..255 (about: the WebGL shader converts HCL with clamping).
const frameKey = (e) => `${e.name || '(unnamed)'}${e.args ? ` ${JSON.stringify(e.args)}` : ''}`;
const chroma = (r, n) => {
  const t = Math.floor((255 * r) / n) / 255, f = (30 * t) % 1;
  return 255 * (0.25 + 0.2 * (2 * Math.abs(f - 0.5) - 1));
};
// track(events, name): what speedscope will show for the thread named
// `name`: its slices' share of the profile's own range and the colour
// rank of its longest frame.
function track(events, name) {
  const tn = events.find((e) => e.ph === 'M' && e.name === 'thread_name' && e.args &&
                                String(e.args.name).includes(name));
  if (!tn) return null;
  const xs = events.filter((e) => e.ph === 'X' && e.pid === tn.pid && e.tid === tn.tid)
    .sort((a, b) => a.ts - b.ts);
  if (!xs.length) return { name, slices: 0, rangeUs: 0, covered: 0 };
  let lo = Infinity, hi = -Infinity, cov = 0, end = -Infinity;
  const frames = new Map();
  for (const e of xs) {
    const a = e.ts, b = e.ts + (e.dur || 0);
    lo = Math.min(lo, a); hi = Math.max(hi, b);
    if (b > end) { cov += b - Math.max(a, end); end = b; } // union of the slices
    frames.set(frameKey(e), (frames.get(frameKey(e)) || 0) + (e.dur || 0));
  }
  const keys = [...frames.keys()].sort((a, b) => (a > b ? 1 : -1));
  const big = keys.reduce((m, k) => (frames.get(k) > frames.get(m) ? k : m), keys[0]);
  const r = keys.indexOf(big);
  return { name, slices: xs.length, rangeUs: hi - lo, covered: hi > lo ? cov / (hi - lo) : 0,
           frames: keys.length, bigRank: r, bigShare: hi > lo ? frames.get(big) / (hi - lo) : 0,
           bigChroma: chroma(r, keys.length) };
}
const describe = (k) => k && `'${k.name}': ${k.slices} slices cover ${pct(k.covered)} of its ` +
  `${(k.rangeUs / 1000).toFixed(1)} ms; longest frame ${pct(k.bigShare)} of it, colour rank ` +
  `${k.bigRank} of ${k.frames} (chroma ~${k.bigChroma.toFixed(0)}/255)`;

// the trace as speedscope reads it: gzip-compressed (-o OUT.json.gz) or not
const raw = readFileSync(trace);
const events = JSON.parse((raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw).toString('utf8')).traceEvents;
const last = names.length ? names[names.length - 1] : null;
const known = last ? track(events, last) : null;
if (last && !known) fail(`the trace has no thread named '${last}'`);
if (known) {
  console.log(`trace: ${describe(known)}`);
  if (known.covered < 0.5) {
    fail(`bad input: the track '${last}' covers only ${pct(known.covered)} of its range (expected ` +
         'mostly covered: the workload\'s long GPU-idle gap is missing)');
  }
}

// --------------------------------------------------------------- pages
// The page as `gpuprof view` wrote it, with a hash that names its embedded
// profile but no view (the page's own default is the left-heavy view; a
// trace is read in time order, speedscope's default).
const pageUrl = `${pathToFileURL(resolve(view)).href}#localProfilePath=gpuprof-embedded-profile`;
const barOf = () => document.body.innerText.split('\n').find((l) => /\(\d+\/\d+\)/.test(l)) || '';
const bar = (p) => p.evaluate(barOf);
const panel = (p) => p.evaluate(() => /Something went wrong/.test(document.body.innerText));

// open(browser): the page, its embedded profile shown (the toolbar's
// "NAME (k/N)"), so that nothing loads after the trace.  Returns {p, alerts}.
async function open(browser) {
  const p = await browser.newPage({ viewport: { width: W, height: H } });
  const alerts = [];
  p.on('dialog', (d) => { alerts.push(d.message()); d.dismiss().catch(() => {}); });
  await p.goto(pageUrl, { timeout: 60000 });
  await p.waitForFunction(() => /\(\d+\/\d+\)|Something went wrong/.test(document.body.innerText), null,
                          { timeout: 60000 });
  if (await panel(p)) fail('speedscope shows its error panel for the page\'s own profile');
  return { p, alerts };
}

// importFile(p, alerts, tag, file, ready, ms): speedscope's "Import" button,
// its file chooser given `file`; waits (deadline ms) until the toolbar
// shows another profile whose title matches `ready` or the error panel
// shows.  Returns the import's wall time in ms.
async function importFile(p, alerts, tag, file, ready, ms) {
  const old = await bar(p);
  const [chooser] = await Promise.all([p.waitForEvent('filechooser', { timeout: 60000 }),
                                       p.getByText('Import').last().click()]);
  const t0 = Date.now();
  await chooser.setFiles(file);
  await p.waitForFunction(([src, old, re]) => {
    const t = (0, eval)(src)();
    return (t !== old && new RegExp(re).test(t)) || /Something went wrong/.test(document.body.innerText);
  }, [`(${barOf})`, old, ready.source], { timeout: ms, polling: 500 });
  const took = Date.now() - t0;
  if (await panel(p)) fail(`${tag}: speedscope shows its error panel`);
  if (alerts.length) fail(`${tag}: speedscope alerted: ${alerts.join(' | ')}`);
  return took;
}

// A synthetic trace of two threads, loaded into the same page after the
// run's trace (imported the same way: no second page load): 'pale', a 300 ms frame with a pale colour (rank 9 of 11 frames,
// the others 1 us each after it: drawn with chroma below 30 by speedscope
// 1.25 (viewer/package-lock.json), as is rank 2; measured, the shader's
// colour differs a little from the formula above), and 'empty', a nearly
// empty chart (two 1 us slices 300 ms apart).
function controls() {
  const ev = [{ ph: 'M', name: 'thread_name', pid: 1, tid: 1, args: { name: 'pale' } },
              { ph: 'M', name: 'thread_name', pid: 1, tid: 2, args: { name: 'empty' } }];
  const n = 11, r = 9;
  for (let k = 0; k < n; k++) {
    const ts = k === r ? 0 : 300000 + 10 * k;
    ev.push({ ph: 'X', name: `f${String(k).padStart(2, '0')}`, pid: 1, tid: 1, ts, dur: k === r ? 300000 : 1 });
  }
  ev.push({ ph: 'X', name: 'a', pid: 1, tid: 2, ts: 0, dur: 1 },
          { ph: 'X', name: 'b', pid: 1, tid: 2, ts: 300000, dur: 1 });
  return JSON.stringify({ traceEvents: ev });
}

const browser = await chromium.launch({
  executablePath: exe, headless: true, timeout: 60000,
  args: ['--no-sandbox', '--disable-gpu', '--headless=new', `--window-size=${W},${H}`],
});
const tmp = mkdtempSync(join(tmpdir(), 'gpd-trace-browser.'));
try {
  const { p, alerts } = await open(browser);
  const ms = await importFile(p, alerts, 'trace', trace, /\(1\/\d+\)/, LOAD_MS);
  console.log(`import of ${trace}: ${(ms / 1000).toFixed(1)} s (file chosen to profiles listed)`);
  if (process.exitCode) throw new Error('import failed');
  // loaded: the toolbar shows "NAME (1/N)", one profile per thread
  // speedscope makes one profile per (pid, tid), named after the
  // thread_name metadata; 'n' steps to the next one: collect the titles
  // (the toolbar line "NAME (k/N)"), then go back to the last NAME's
  const titles = [];
  for (let k = 0; k < 32; k++) {
    const t = await bar(p);
    titles.push(t);
    const m = /\((\d+)\/(\d+)\)/.exec(t);
    if (!m || m[1] === m[2]) break; // the last one
    await p.keyboard.press('n');
    // a loaded machine: wait for the toolbar to change, with a deadline
    await p.waitForFunction(([src, old]) => (0, eval)(src)() !== old, [`(${barOf})`, t],
                            { timeout: 20000 });
  }
  const all = titles.join(' | ');
  console.log(`speedscope profiles: ${all}`);
  for (const n of names) if (!all.includes(n)) fail(`no profile named '${n}' in speedscope`);
  const target = last ? titles.findIndex((t) => t.includes(last)) : -1;
  for (let k = titles.length - 1; target >= 0 && k > target; k--) {
    const t = await bar(p);
    await p.keyboard.press('p');
    await p.waitForFunction(([src, old]) => (0, eval)(src)() !== old, [`(${barOf})`, t],
                            { timeout: 20000 });
  }
  const shown = await bar(p);
  if (target >= 0 && !shown.includes(last)) fail(`speedscope shows '${shown}', not '${last}'`);
  // the shown profile draws its slices (polled with a deadline: speedscope
  // redraws on a later frame)
  const s = await waitDrawn(p, W, H, MIN_DRAWN, WAIT_MS);
  console.log(`drawn pixels of '${shown}': ${pct(s.drawn)} (vivid ${pct(s.vivid)})`);
  if (s.drawn < MIN_DRAWN) {
    fail(`the page shows no timeline (${pct(s.drawn)} drawn pixels, ${pct(s.vivid)} vivid; ` +
         `${describe(known) || 'no track'})`);
  }
  if (await panel(p)) fail('speedscope shows its error panel');
  await p.screenshot({ path: shot });

  // the measure itself: a pale frame is drawn, a nearly empty chart is not
  const ctl = join(tmp, 'controls.json');
  writeFileSync(ctl, controls());
  await importFile(p, alerts, 'controls', ctl, /pale \(pid 1, tid 1\) \(1\/2\)/, 60000);
  const qs = await waitDrawn(p, W, H, MIN_DRAWN, WAIT_MS);
  console.log(`control: a 300 ms frame of a pale colour: drawn ${pct(qs.drawn)} (vivid ${pct(qs.vivid)})`);
  if (qs.drawn < MIN_DRAWN) fail(`the pixel measure misses speedscope's pale frame (${pct(qs.drawn)} drawn)`);
  if (qs.vivid >= MIN_DRAWN) fail(`the control frame is not pale (vivid ${pct(qs.vivid)}): speedscope's palette changed`);
  await p.keyboard.press('n');
  await p.waitForFunction(() => /empty \(pid 1, tid 2\) \(2\/2\)/.test(document.body.innerText), null,
                          { timeout: 20000 });
  // painted: its grid lines and time labels are there (not white)
  const es = await waitShare(p, W, H, (x) => x.ink >= 0.005 && x.drawn < MIN_DRAWN, WAIT_MS);
  console.log(`control: a nearly empty chart: drawn ${pct(es.drawn)} (not white ${pct(es.ink)})`);
  if (es.ink < 0.005) fail('the nearly empty chart was never painted (no grid lines)');
  if (es.drawn >= MIN_DRAWN) fail(`the pixel measure sees a nearly empty chart as drawn (${pct(es.drawn)})`);
} catch (e) {
  fail(e.message);
} finally {
  await browser.close();
  rmSync(tmp, { recursive: true, force: true });
}
