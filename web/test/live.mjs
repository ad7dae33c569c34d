// Watches `bottleneck run --live=web`'s page in Debian's headless Chromium
// while the program runs, and prints what it saw as JSON on stdout; the Go
// test (internal/cli/run/live_browser_test.go) asserts on it.
//
//   node test/live.mjs URL SCREENSHOT.png
//
// Gathered: console errors and uncaught exceptions; the first rank's step
// count as the page showed it, read every 100 ms, in the order seen (each
// new value once); the cause line; the first rank's row as the page last
// showed it (its cells by column heading); whether the page then became the run's
// report (the live table gone) within 240 s, and the report's title and
// whether any injected script ran; how many of the 100 ms looks saw the
// live table (none: the browser opened the page after the program ended).
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [url, shot] = process.argv.slice(2);
const exe = process.env.BOTTLENECK_CHROMIUM || '/usr/bin/chromium';
const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bn-chromium-'));
const out = { url, consoleErrors: [], pageErrors: [], dialogs: [], steps: [], causes: [], report: false, liveLooks: 0 };
const browser = await chromium.launchPersistentContext(userDir, {
  executablePath: exe, headless: true, viewport: { width: 1400, height: 900 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = browser.pages()[0] || await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error') out.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => out.pageErrors.push(String(e)));
  page.on('dialog', (d) => { out.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  await page.goto(url, { waitUntil: 'load', timeout: 120000 });
  const deadline = Date.now() + 240000;
  while (Date.now() < deadline) {
    let seen;
    try {
      seen = await page.evaluate(() => {
        const table = document.getElementById('ranks');
        if (!table) return { report: true, title: document.title };
        const cell = table.querySelector('tr td:nth-child(2)');
        const cause = document.querySelector('#causes p');
        const heads = [...document.querySelectorAll('thead th')].map((th) => th.textContent);
        const row = table.querySelector('tr');
        const cells = row ? Object.fromEntries([...row.children].map((td, i) => [heads[i], td.textContent])) : null;
        return { report: false, step: cell ? Number(cell.textContent) : null, cause: cause ? cause.textContent : null, cells };
      });
    } catch (e) {
      seen = null; // the page is navigating (the reload into the report)
    }
    if (seen && seen.report) {
      await page.waitForLoadState('load');
      out.report = true;
      out.title = await page.title();
      break;
    }
    if (seen) out.liveLooks++;
    if (seen && seen.step !== null && seen.step !== out.steps[out.steps.length - 1]) out.steps.push(seen.step);
    if (seen && seen.cause && seen.cause !== out.causes[out.causes.length - 1]) out.causes.push(seen.cause);
    if (seen && seen.cells) out.cells = seen.cells;
    await page.waitForTimeout(100);
  }
  out.xss = await page.evaluate(() => window.__xss ?? null).catch(() => null);
  await page.screenshot({ path: shot }).catch(() => {});
} catch (e) {
  out.fatal = String(e && e.stack || e);
} finally {
  await browser.close();
  fs.rmSync(userDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out));
