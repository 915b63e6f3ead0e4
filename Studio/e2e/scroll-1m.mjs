// Measures the documents grid over a 1,000,000-document collection (a tool, not part of the test suite): loads
// the documents into database `scroll1m` of a running server when it has fewer, opens the grid in Debian's
// Chromium, jumps to the middle and the end (time until the rows are shown), scrolls 200 steps of 120 px and
// prints the frame times and the page requests made.
//
//   node e2e/scroll-1m.mjs http://127.0.0.1:8080
import { chromium } from 'playwright-core';

const base = process.argv[2] ?? 'http://127.0.0.1:8080';
const total = 1_000_000;
const post = (path, body, method = 'POST') => fetch(base + path, { method, body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });

await post('/admin/databases?name=scroll1m', { DatabaseName: 'scroll1m' }, 'PUT');
const have = (await (await fetch(base + '/databases/scroll1m/collections/stats')).json()).Collections.Items ?? 0;
if (have < total) {
  const started = Date.now();
  for (let start = 0; start < total; start += 20_000) {
    const r = await post('/databases/scroll1m/bulk_docs', { Commands: Array.from({ length: 20_000 }, (_, k) => ({ Id: `items/${start + k + 1}`, Type: 'PUT', Document: { N: start + k + 1, Name: `item ${start + k + 1}`, '@metadata': { '@collection': 'Items' } } })) });
    if (!r.ok) throw new Error(`bulk_docs: ${r.status} ${await r.text()}`);
  }
  console.log(`loaded ${total.toLocaleString('en-US')} documents in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  let requests = 0;
  page.on('request', (r) => { if (r.url().includes('/collections/docs')) requests++; });
  await page.goto(base + '/studio/db/scroll1m/documents/Items');
  const grid = page.getByRole('grid', { name: 'Documents of Items' });
  await grid.getByRole('gridcell', { name: 'items/1', exact: true }).waitFor();
  for (const [label, fraction, id] of [['middle', 0.5, null], ['end', 1, `items/${total}`]]) {
    const t = Date.now();
    await grid.evaluate((el, f) => { el.scrollTop = (el.scrollHeight - el.clientHeight) * f; }, fraction);
    if (id) await grid.getByRole('gridcell', { name: id, exact: true }).waitFor();
    else await page.waitForFunction(() => ![...document.querySelectorAll('[role=gridcell]')].some((c) => c.textContent === '…'));
    console.log(`jump to the ${label}: rows shown in ${Date.now() - t} ms`);
  }
  const frames = await page.evaluate(async () => {
    const el = document.querySelector('[role=grid]');
    el.scrollTop = el.scrollHeight / 3;
    const times = [];
    let last = performance.now();
    for (let i = 0; i < 200; i++) {
      el.scrollTop += 120;
      await new Promise((r) => requestAnimationFrame(r));
      const now = performance.now();
      times.push(now - last);
      last = now;
    }
    times.sort((a, b) => a - b);
    return { p50: times[100], p99: times[198], max: times[199] };
  });
  console.log(`scrolling 200 × 120 px: frame time p50 ${frames.p50.toFixed(1)} ms, p99 ${frames.p99.toFixed(1)} ms, max ${frames.max.toFixed(1)} ms; ${requests} page requests in all`);
} finally {
  await browser.close();
}
