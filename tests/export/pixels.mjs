// pixels.mjs - shared by the headless-Chromium checks (browser-check.mjs,
// tests/trace/trace-browser.mjs): how much of speedscope's chart area a
// screenshot shows drawn.
//
// speedscope colours a frame by its rank among the profile's frames sorted
// by name (theme colorForBucket: hue 0..324 degrees, chroma 0.05..0.25,
// lightness 0.95..0.80, chroma and lightness following a triangle wave of
// 30 periods over the ranks).  About a third of the ranks get a pale
// colour (chroma below 30/255): a test that counted only saturated pixels
// saw a legitimately drawn profile whose one long frame had such a rank as
// empty (trace.browser, 0.28 %).  So a pixel counts as drawn when it is
// not neutral: its channels differ by CHROMA_MIN or more.  The lowest
// chroma speedscope draws is 0.05 x 255 = 12.75; the page's background
// (white), grid lines (grey) and text (black) are neutral (0).
const CHROMA_MIN = 8;
// rows 0..TOP-1 are the toolbar (its selected tab is blue: not the chart)
const TOP = 22;

// drawnShare(page, w, h): {drawn, vivid, ink}: shares of the w x (h - TOP)
// chart area (below the toolbar) that are drawn (chroma >= CHROMA_MIN),
// vivid (chroma > 30, the old measure, for the log) and not white (grid
// lines and time labels too: the chart was painted), the mouse out of the
// way.
export async function drawnShare(p, w, h) {
  await p.mouse.move(w - 2, 2);
  const png = (await p.screenshot()).toString('base64');
  return p.evaluate(async ([b64, w, h, top, cmin]) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = w; c.height = h;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, top, w, h - top).data;
    let drawn = 0, vivid = 0, ink = 0;
    for (let i = 0; i < d.length; i += 4) {
      const mn = Math.min(d[i], d[i + 1], d[i + 2]), ch = Math.max(d[i], d[i + 1], d[i + 2]) - mn;
      if (ch >= cmin) drawn++;
      if (ch > 30) vivid++;
      if (mn < 250) ink++;
    }
    const n = w * (h - top);
    return { drawn: drawn / n, vivid: vivid / n, ink: ink / n };
  }, [png, w, h, TOP, CHROMA_MIN]);
}

// waitShare(page, w, h, done, ms): drawnShare polled every 250 ms until
// done(share) holds or ms passed (speedscope draws on a later animation
// frame, late on a loaded machine); the last measurement.
export async function waitShare(p, w, h, done, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const s = await drawnShare(p, w, h);
    if (done(s) || Date.now() >= end) return s;
    await p.waitForTimeout(250);
  }
}
// waitDrawn(page, w, h, min, ms): waitShare until the drawn share is >= min.
export const waitDrawn = (p, w, h, min, ms) => waitShare(p, w, h, (s) => s.drawn >= min, ms);

// pct(x): "12.3 %"
export const pct = (x) => `${(100 * x).toFixed(2)} %`;
