// Drives Debian's headless Chromium through the timeline's launch links
// and prints what it saw as JSON on stdout; the Go test
// (internal/htmlreport/browser_test.go) asserts on it.
//
//   node test/links.mjs URL SCREENSHOT.png
//
// Gathered: console errors and uncaught exceptions; the links the page
// exposes (canvas.bnLinks, a test hook); for the first one, hovering its
// device box then its launch call box: arrows drawn (canvas.dataset.links),
// pixels in the hover colour and the tooltip's lines; after moving away,
// whether the canvas is back to its first image; the "Launch links" toggle:
// arrows drawn and pixels changed when on, the first image again when off;
// whether any injected script ran.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [url, shot] = process.argv.slice(2);
const exe = process.env.BOTTLENECK_CHROMIUM || '/usr/bin/chromium';
const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bn-chromium-'));
const out = { url, consoleErrors: [], pageErrors: [], dialogs: [] };
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
  await page.goto(url, { waitUntil: 'load', timeout: 120000 });
  await page.waitForSelector('canvas.timeline', { timeout: 60000 });
  const canvas = await page.$('canvas.timeline');
  await canvas.scrollIntoViewIfNeeded();
  await page.waitForTimeout(300);

  // Snapshot of the canvas: a hash of its pixels, how many are in the
  // hover colour (#c2185b), and how many differ from a reference.
  const snap = () => page.$eval('canvas.timeline', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let hover = 0, h = 2166136261;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.abs(d[i] - 194) < 20 && Math.abs(d[i + 1] - 24) < 20 && Math.abs(d[i + 2] - 91) < 20 && d[i + 3] > 200) hover++;
      h = Math.imul(h ^ (d[i] | d[i + 1] << 8 | d[i + 2] << 16), 16777619);
    }
    window.__bnRef = window.__bnRef || d.slice();
    let diff = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] !== window.__bnRef[i] || d[i + 1] !== window.__bnRef[i + 1] || d[i + 2] !== window.__bnRef[i + 2]) diff++;
    return { hash: h >>> 0, hover, diff, links: Number(c.dataset.links || 0), drawn: Number(c.dataset.drawn || 0) };
  });
  const tipLines = () => page.$$eval('#bn-tip > div', (ds) => ds.map((d) => d.textContent));
  const tipVisible = () => page.$eval('#bn-tip', (t) => t.style.display === 'block').catch(() => false);

  out.before = await snap();
  out.links = await page.$eval('canvas.timeline', (c) => (c.bnLinks ? c.bnLinks() : null));
  const box = await canvas.boundingBox();
  if (out.links && out.links.length) {
    const k = out.links[0];
    await page.mouse.move(box.x + k.kx, box.y + k.ky);
    await page.waitForTimeout(150);
    out.hoverKernel = { ...(await snap()), tip: await tipLines(), visible: await tipVisible() };
    await page.mouse.move(box.x + k.lx, box.y + k.ly);
    await page.waitForTimeout(150);
    out.hoverLaunch = { ...(await snap()), tip: await tipLines(), visible: await tipVisible() };
    // Away from every box (the label column), then off the canvas.
    await page.mouse.move(box.x + 5, box.y + box.height - 3);
    await page.mouse.move(box.x + box.width / 2, box.y + box.height + 40);
    await page.waitForTimeout(150);
    out.away = await snap();
  }
  const toggle = await page.$('#timeline button.toggle');
  out.toggleText = toggle ? await toggle.textContent() : null;
  if (toggle) {
    await toggle.click();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height + 40);
    await page.waitForTimeout(150);
    out.toggleOn = { ...(await snap()), pressed: await toggle.getAttribute('aria-pressed') };
    out.status = await page.$eval('#timeline .count', (e) => e.textContent);
    await page.screenshot({ path: shot, fullPage: true });
    await toggle.click();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height + 40);
    await page.waitForTimeout(150);
    out.toggleOff = { ...(await snap()), pressed: await toggle.getAttribute('aria-pressed') };
  } else {
    await page.screenshot({ path: shot, fullPage: true });
  }
  out.xss = await page.evaluate(() => window.__xss || null);
  out.injectedElements = await page.evaluate(() => document.querySelectorAll('img, iframe, object, embed, svg').length);
} catch (e) {
  out.fatal = String(e && e.stack || e);
} finally {
  await browser.close();
  fs.rmSync(userDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out) + '\n');
