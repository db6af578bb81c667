// browser-check.mjs VIEWER_DIR PAGE.html SHOT.png [--pprof=X.pb.gz] NAME... : load the page
// `gpuprof view` wrote in headless Chromium (the system's, driven by the
// npm package playwright-core) and check that it shows the flame graph of
// the profile, not an error:
//  - speedscope's toolbar names a GPU metric's profile and its error panel
//    ("Something went wrong") and import alerts never appear;
//  - the flame graph area of a screenshot shows drawn frame rectangles
//    (pixel count, pixels.mjs), not an empty page;
//  - hovering over the frames, speedscope's tooltips (DOM text) name
//    every NAME given (a frame name: main, <gpu kernel>, a kernel...).
// Saves the screenshot (with the tooltip of the last NAME found) to SHOT.
// --pprof: then the same page with X.pb.gz (`gpuprof export --format
// pprof`) embedded in place of the speedscope JSON: speedscope's own pprof
// importer must read it and draw its flame graph (a second real decoder).
// Exits 0 on success, 1 with the reason, 77 when no Chromium is there.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { pct, waitDrawn } from './pixels.mjs';

const [viewer, page, shot, ...rest] = process.argv.slice(2);
const pprof = rest.filter((a) => a.startsWith('--pprof=')).map((a) => a.slice(8))[0];
const names = rest.filter((a) => !a.startsWith('--pprof='));
const { chromium } = createRequire(resolve(viewer) + '/')('playwright-core');
// Debian's /usr/bin/chromium is a wrapper script; its binary is beside it
const exe = [process.env.CHROMIUM, '/usr/lib/chromium/chromium', '/usr/bin/chromium']
  .find((p) => p && existsSync(p));
if (!exe) {
  console.log('SKIP: no chromium');
  process.exit(77);
}
const W = 1200, H = 700;
// drawn share of the chart area, polled for up to 20 s (pixels.mjs)
const flamePixels = (p) => waitDrawn(p, W, H, 0.02, 20000);
const fail = (why) => { console.error(`FAIL: ${why}`); process.exitCode = 1; };
// root needs --no-sandbox; no GPU here: WebGL runs on SwiftShader
const browser = await chromium.launch({
  executablePath: exe, headless: true, timeout: 60000,
  args: ['--no-sandbox', '--disable-gpu', '--headless=new', `--window-size=${W},${H}`],
});
try {
  const p = await browser.newPage({ viewport: { width: W, height: H } });
  const alerts = [];
  p.on('dialog', (d) => { alerts.push(d.message()); d.dismiss().catch(() => {}); });
  await p.goto(pathToFileURL(resolve(page)).href);
  // loaded: the toolbar names the active profile
  await p.waitForFunction(() => /(GPUOP|GKER)/.test(document.body.innerText) ||
                                /Something went wrong/.test(document.body.innerText),
                          null, { timeout: 60000 });
  const text = await p.evaluate(() => document.body.innerText);
  if (/Something went wrong/.test(text)) fail('speedscope shows its error panel');
  if (alerts.length) fail(`speedscope alerted: ${alerts.join(' | ')}`);
  const px = await flamePixels(p);
  console.log(`drawn pixels: ${pct(px.drawn)} (vivid ${pct(px.vivid)})`);
  if (px.drawn < 0.02) fail(`the page shows no flame graph (${pct(px.drawn)} drawn pixels)`);
  // tooltips: the rows of the flame graph (20 px high, the first centred
  // at y = 153) at a few x positions, down to the first empty row
  const base = await p.evaluate(() => document.body.innerText);
  for (const n of names) if (base.includes(n)) fail(`'${n}' is on the page before any hover`);
  const seen = new Set();
  const want = new Set(names);
  let last = null;
  for (const x of [40, 400, 800, 1100]) {
    for (let y = 153; y < H - 10 && want.size; y += 20) {
      await p.mouse.move(x, y);
      const tip = (await p.evaluate(() => document.body.innerText)).replace(base, '');
      if (!tip.trim()) break;
      for (const n of [...want]) {
        // "4.00ms (67%) NAME file:line": the name right after the share
        if (new RegExp(`\\) ${n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\s|$)`).test(tip)) { want.delete(n); seen.add(tip.trim().replace(/\s+/g, ' ')); last = [x, y]; }
      }
    }
  }
  console.log(`tooltips: ${[...seen].join(' | ')}`);
  if (want.size) fail(`no frame named ${[...want].join(', ')} under the mouse`);
  if (last) await p.mouse.move(last[0], last[1]);
  await p.screenshot({ path: shot });
  if (pprof) {
    const b64 = readFileSync(pprof).toString('base64');
    const html = readFileSync(page, 'utf8').replace(/loadFileFromBase64\("[^"]*", "[A-Za-z0-9+/=]*"\)/,
                                                     () => `loadFileFromBase64("profile.pb.gz", "${b64}")`);
    const pp = `${page}.pprof.html`;
    writeFileSync(pp, html);
    const q = await browser.newPage({ viewport: { width: W, height: H } });
    q.on('dialog', (d) => { alerts.push(d.message()); d.dismiss().catch(() => {}); });
    await q.goto(pathToFileURL(resolve(pp)).href);
    await q.waitForFunction(() => /profile\.pb\.gz|Something went wrong/.test(document.body.innerText),
                            null, { timeout: 60000 });
    if (/Something went wrong/.test(await q.evaluate(() => document.body.innerText)) || alerts.length)
      fail(`speedscope cannot read the pprof export ${alerts.join(' | ')}`);
    const cp = await flamePixels(q);
    console.log(`pprof in speedscope: drawn pixels: ${pct(cp.drawn)} (vivid ${pct(cp.vivid)})`);
    if (cp.drawn < 0.02) fail(`speedscope draws no flame graph of the pprof export (${pct(cp.drawn)} drawn pixels)`);
  }
} finally {
  await browser.close();
}
