// Drives Debian's headless Chromium (never a downloaded browser) through
// one report page and prints what it saw as JSON on stdout; the Go test
// (internal/serve/browser_test.go) asserts on it.
//
//   node test/browser.mjs URL SCREENSHOT.png
//
// Checks gathered: console errors and uncaught exceptions, the verdict
// section's text, whether clicking a numeric header of the first sortable
// table sorts it (both directions), non-blank pixels of the flame graph
// and timeline canvases (also after a zoom), the launch links drawn by the
// timeline's toggle, whether any injected script ran (window.__xss,
// dialogs), and elements a hostile name would create.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [url, shot] = process.argv.slice(2);
const exe = process.env.BOTTLENECK_CHROMIUM || '/usr/bin/chromium';
const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bn-chromium-'));
const out = { url, consoleErrors: [], pageErrors: [], dialogs: [], requests: [] };
const browser = await chromium.launchPersistentContext(userDir, {
  executablePath: exe, headless: true, viewport: { width: 1400, height: 1000 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = browser.pages()[0] || await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') out.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => out.pageErrors.push(String(e)));
  page.on('dialog', (d) => { out.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('request', (r) => { if (!r.url().startsWith('data:')) out.requests.push(r.url()); });
  const t0 = Date.now();
  await page.goto(url, { waitUntil: 'load', timeout: 120000 });
  await page.waitForSelector('#verdict', { timeout: 60000 });
  out.loadMs = Date.now() - t0;
  await page.waitForTimeout(300);
  out.title = await page.title();
  out.verdict = await page.$eval('#verdict', (e) => e.textContent);
  out.sections = await page.$$eval('section.card', (ss) => ss.map((s) => s.id));

  // Sorting: the first table with a numeric sortable header.
  out.sort = await page.evaluate(() => {
    const tables = [...document.querySelectorAll('#ops-table, #kernels-table, #python-table'), ...document.querySelectorAll('table.data')];
    for (const t of tables) {
      const all = [...t.querySelectorAll('th')];
      const rows = [...t.querySelectorAll('tbody tr')];
      if (rows.length < 2) continue;
      let best = null, bestN = 1;
      for (const th of t.querySelectorAll('th.num.sortable')) {
        const c = all.indexOf(th);
        const n = new Set(rows.map((r) => r.children[c].textContent)).size;
        if (n > bestN) { best = th; bestN = n; }
      }
      if (best) return { table: t.id, header: best.textContent, col: all.indexOf(best) };
    }
    return null;
  });
  if (out.sort) {
    const sel = `#${out.sort.table} th:nth-child(${out.sort.col + 1})`;
    const read = () => page.$$eval(`#${out.sort.table} tbody tr`, (rs, c) => rs.map((r) => r.children[c].textContent), out.sort.col);
    const num = (s) => { const m = /-?[\d.,]+/.exec(s.replace(/,/g, '')); if (!m) return NaN; let v = parseFloat(m[0]); const u = s.trim().split(/\s+/).pop();
      return v * ({ s: 1e6, ms: 1e3, 'µs': 1, GB: 1e9, MB: 1e6, KB: 1e3 }[u] || 1); };
    await page.click(sel);
    const first = (await read()).map(num);
    await page.click(sel);
    const second = (await read()).map(num);
    const dir = (a) => {
      const v = a.filter((x) => !isNaN(x));
      const ok = (desc) => v.every((x, i) => i === 0 || (desc ? v[i - 1] >= x : v[i - 1] <= x));
      if (v.length < 2 || v[0] === v[v.length - 1]) return 'flat';
      return ok(true) ? 'desc' : ok(false) ? 'asc' : 'none';
    };
    const d1 = dir(first), d2 = dir(second);
    out.sort.first = d1; out.sort.second = d2; out.sort.rows = first.length;
    out.sort.ok = (d1 === 'desc' && d2 === 'asc') || (d1 === 'asc' && d2 === 'desc');
  }
  // Filtering.
  const filt = await page.$('.table-wrap input.filter');
  if (filt) {
    await filt.fill('zzzz-no-such-name-zzzz');
    out.filterRows = await page.$eval('.table-wrap table tbody', (b) => b.children.length);
    await filt.fill('');
  }

  const inked = (sel) => page.$$eval(sel, (cs) => cs.map((c) => {
    const ctx = c.getContext('2d');
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4 * 7) if (d[i] > 0) n++;
    return { w: c.width, h: c.height, inked: n, drawn: Number(c.dataset.drawn || 0) };
  }));
  out.flame = await inked('canvas.flame');
  out.timeline = await inked('canvas.timeline');
  out.roofline = await inked('canvas.roofline');
  out.rooflineText = await page.$eval('#roofline', (e) => e.textContent).catch(() => '');
  // Zoom the timeline (button) and the first flame graph (click a frame).
  const zoomBtn = await page.$('#timeline button');
  if (zoomBtn) {
    for (let i = 0; i < 3; i++) await zoomBtn.click();
    await page.waitForTimeout(1200); // live mode fetches detail
    out.timelineZoomed = await inked('canvas.timeline');
    out.timelineStatus = await page.$eval('#timeline .count', (e) => e.textContent);
    // The launch links toggle draws the links in view (errors are caught
    // with the console's).
    const linksBtn = await page.$('#timeline button.toggle');
    if (linksBtn) {
      await linksBtn.click();
      await page.waitForTimeout(100);
      out.timelineLinks = await page.$eval('canvas.timeline', (c) => ({ arrows: Number(c.dataset.links || 0), links: c.bnLinks ? c.bnLinks().length : -1 }));
    }
  }
  const fc = await page.$('canvas.flame');
  if (fc) {
    const box = await fc.boundingBox();
    await page.mouse.click(box.x + box.width / 3, box.y + 18 * 2 + 9);
    await page.mouse.move(box.x + box.width / 2, box.y + 9);
    out.flameZoomed = await inked('canvas.flame');
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: shot, fullPage: true });
  out.xss = await page.evaluate(() => window.__xss || null);
  out.injectedElements = await page.evaluate(() => document.querySelectorAll('img, iframe, object, embed, svg').length);
  out.scripts = await page.evaluate(() => document.scripts.length);
  out.bodyText = (await page.evaluate(() => document.body.innerText)).slice(0, 200000);
} catch (e) {
  out.fatal = String(e && e.stack || e);
} finally {
  await browser.close();
  fs.rmSync(userDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out) + '\n');
