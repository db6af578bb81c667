// pixels.mjs - shared by the headless-Chromium checks (browser-check.mjs,
// tests/trace/trace-browser.mjs).
// colouredShare(page, w, h): share of saturated pixels (a frame's colour,
// not white/grey/black) in a w x h screenshot of page, the mouse out of
// the way.
export async function colouredShare(p, w, h) {
  await p.mouse.move(w - 2, 2);
  const png = (await p.screenshot()).toString('base64');
  return p.evaluate(async ([b64, w, h]) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = w; c.height = h;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, w, h).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      const mx = Math.max(d[i], d[i + 1], d[i + 2]), mn = Math.min(d[i], d[i + 1], d[i + 2]);
      if (mx - mn > 30) n++;
    }
    return n / (w * h);
  }, [png, w, h]);
}
