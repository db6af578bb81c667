// trace-browser.mjs VIEWER_DIR VIEW.html TRACE.json SHOT.png NAME... : open a
// Chrome trace-event file written by `gpuprof trace --format chrome` in a
// real viewer, speedscope (npm, offline), in headless Chromium: the page
// `gpuprof view` wrote (speedscope's app, self-contained) is given the
// trace instead of its embedded profile through speedscope's own
// window.speedscope.loadFileFromBase64, so that speedscope's Chrome trace
// importer reads the file.  Checks: no error panel, no import alert, the
// timeline area is mostly coloured slices (pixel count), and every NAME (a
// thread / stream track name) is among speedscope's profiles, stepped
// through with its 'n' key.  Saves a screenshot of the profile of the
// last NAME.
// Exits 0, 1 with the reason, 77 without Chromium.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { colouredShare } from '../export/pixels.mjs';

const [viewer, view, trace, shot, ...names] = process.argv.slice(2);
const { chromium } = createRequire(resolve(viewer) + '/')('playwright-core');
const exe = [process.env.CHROMIUM, '/usr/lib/chromium/chromium', '/usr/bin/chromium']
  .find((p) => p && existsSync(p));
if (!exe) {
  console.log('SKIP: no chromium');
  process.exit(77);
}
const W = 1200, H = 700;
const fail = (why) => { console.error(`FAIL: ${why}`); process.exitCode = 1; };
const b64 = readFileSync(trace).toString('base64');
const html = readFileSync(view, 'utf8')
  .replace(/#localProfilePath=gpuprof-embedded-profile&view=left-heavy/,
           '#localProfilePath=gpuprof-embedded-profile')
  .replace(/loadFileFromBase64\("[^"]*", "[A-Za-z0-9+/=]*"\)/,
           () => `loadFileFromBase64("gpuprof-trace.json", "${b64}")`);
const page = `${view}.trace.html`;
writeFileSync(page, html);
const browser = await chromium.launch({
  executablePath: exe, headless: true, timeout: 60000,
  args: ['--no-sandbox', '--disable-gpu', '--headless=new', `--window-size=${W},${H}`],
});
try {
  const p = await browser.newPage({ viewport: { width: W, height: H } });
  const alerts = [];
  p.on('dialog', (d) => { alerts.push(d.message()); d.dismiss().catch(() => {}); });
  await p.goto(pathToFileURL(resolve(page)).href);
  // loaded: the toolbar shows "NAME (1/N)", one profile per thread
  await p.waitForFunction(() => /\(1\/\d+\)|Something went wrong/.test(document.body.innerText),
                          null, { timeout: 60000 });
  const text = await p.evaluate(() => document.body.innerText);
  if (/Something went wrong/.test(text)) fail('speedscope shows its error panel');
  if (alerts.length) fail(`speedscope alerted: ${alerts.join(' | ')}`);
  // speedscope makes one profile per (pid, tid) and names it after the
  // thread_name metadata: its profile selector lists them
  // speedscope makes one profile per (pid, tid), named after the
  // thread_name metadata; 'n' steps to the next one: collect the titles,
  // and stay on the one named by the last NAME for the screenshot
  // the toolbar line "NAME (k/N)"
  const barOf = () => document.body.innerText.split('\n').find((l) => /\(\d+\/\d+\)/.test(l)) || '';
  const bar = () => p.evaluate(barOf);
  const titles = [];
  for (let k = 0; k < 32; k++) {
    const t = await bar();
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
  const target = names.length ? titles.findIndex((t) => t.includes(names[names.length - 1])) : -1;
  for (let k = titles.length - 1; target >= 0 && k > target; k--) {
    const t = await bar();
    await p.keyboard.press('p');
    await p.waitForFunction(([src, old]) => (0, eval)(src)() !== old, [`(${barOf})`, t],
                            { timeout: 20000 });
  }
  // the shown profile (the last NAME's: the idle track spans the run)
  // draws its slices: mostly coloured pixels, not an empty page
  // (polled with a deadline: speedscope redraws on a later frame)
  let colored = 0;
  for (let k = 0; k < 40 && colored < 0.02; k++) {
    if (k) await p.waitForTimeout(250);
    colored = await colouredShare(p, W, H);
  }
  console.log(`coloured pixels of '${titles[target] || titles[0]}': ${(100 * colored).toFixed(1)} %`);
  if (colored < 0.02) fail(`the page shows no timeline (${(100 * colored).toFixed(2)} % coloured pixels)`);
  if (/Something went wrong/.test(await p.evaluate(() => document.body.innerText)))
    fail('speedscope shows its error panel');
  await p.screenshot({ path: shot });
} finally {
  await browser.close();
}
