// End-to-end test of the Studio: a real server (child process, temporary data dir) and Debian's Chromium driven by
// playwright-core. Creates a database, creates/edits/clones/deletes documents, runs queries and checks the grid,
// creates an index (a compile error first, shown at its line) and waits for it to be up to date, exports the database
// and imports the dump into another, adds, disables, enables and deletes a subscription, and saves the expiration and
// revisions settings, backs up, restores into a new database and runs a periodic backup from the Tasks screen, opens the
// dashboard, the storage view and the cluster view (a second server added as a node from it), checks the errors shown for a malformed query and for a stopped server, runs
// axe-core on every screen (no serious or critical violations), and takes a screenshot of every screen.
// Prints the first load's gzipped JavaScript and the render time of a 1,000-row query result (measured, not asserted:
// speed is for benchmarks).
//
//   node e2e/studio.e2e.mjs [--server PATH/RavenLite.Server.dll] [--screenshots DIR] [--chromium PATH]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith('--') ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
const serverDll = resolve(args.server ?? join(here, '../../Server/bin/Release/net10.0/RavenLite.Server.dll'));
const shots = args.screenshots ? resolve(args.screenshots) : null;
const chromiumPath = args.chromium ?? process.env.CHROMIUM ?? '/usr/bin/chromium';
const axeSource = readFileSync(join(here, '../node_modules/axe-core/axe.min.js'), 'utf8');

const step = (name) => console.log(`# ${new Date().toISOString().slice(11, 19)} ${name}`);

function startServer(dataDir) {
  return new Promise((resolveStart, reject) => {
    const child = spawn('dotnet', [serverDll, '--DataDir', dataDir, '--ServerUrl', 'http://127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error('server did not start in 60 s:\n' + out)), 60_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) { clearTimeout(timer); resolveStart({ child, url: m[1], output: () => out }); }
    });
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${out}`)); });
  });
}

async function api(url, method = 'GET', body) {
  const r = await fetch(url, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: body === undefined ? {} : { 'Content-Type': 'application/json' } });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined };
}

async function axe(page, screen) {
  await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.equal(bad.length, 0, `${screen}: axe found ${bad.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`).join('; ')}`);
}

/** Replaces what a CodeMirror editor holds and checks it holds exactly that: a fill that races the editor's own focus
 * handling (it restores its selection a moment after focus) can land at the end of the old text instead of replacing it. */
async function fillEditor(editor, text) {
  // The whole document from the editor's view (CodeMirror links its content element to it); the rendered lines otherwise.
  const held = () => editor.evaluate((el) => el.cmTile?.root?.view?.state.doc.toString()
    ?? Array.from(el.querySelectorAll('.cm-line')).map((l) => l.textContent).join('\n'));
  for (let attempt = 1; ; attempt++) {
    await editor.click();
    await editor.fill(text);
    const deadline = Date.now() + 2_000;
    let now = await held();
    while (now !== text && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      now = await held();
    }
    if (now === text) return;
    if (attempt === 3) throw new Error(`the editor holds ${JSON.stringify(now)} after filling it with ${JSON.stringify(text)}`);
    console.log(`studio: editor fill attempt ${attempt} left ${JSON.stringify(now)}; filling again`);
  }
}

async function shot(page, name) {
  if (!shots) return;
  await page.screenshot({ path: join(shots, `${name}.png`) });
}

const dataDir = mkdtempSync(join(tmpdir(), 'ravenlite-studio-e2e-'));
let server;
let browser;
let page;
// What the Studio asked the server lately (method, path, status, and the body of a refusal): printed on a failure.
const requests = [];
const pageErrors = [];
try {
  step('starting the server');
  server = await startServer(dataDir);
  const base = server.url;
  if (shots) mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('response', async (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/studio/') || u.pathname.startsWith('/assets/')) return;
    const body = r.status() >= 400 ? ' ' + (await r.text().catch(() => '')).slice(0, 300) : '';
    requests.push(`${r.request().method()} ${u.pathname}${u.search} -> ${r.status()}${body}`);
    if (requests.length > 40) requests.shift();
  });

  // First load: what JavaScript the browser downloads (compressed bytes on the wire).
  step('first load');
  const jsBytes = [];
  const onResponse = async (r) => { if (r.url().endsWith('.js')) { const s = await r.request().sizes().catch(() => null); if (s) jsBytes.push(s.responseBodySize); } };
  page.on('response', onResponse);
  const browserRoot = await fetch(base + '/', { headers: { Accept: 'text/html' }, redirect: 'manual' });
  assert.equal(browserRoot.status, 302, 'GET / from a browser redirects');
  assert.equal(browserRoot.headers.get('location'), '/studio/');
  assert.equal((await fetch(base + '/')).status, 400, 'GET / from an API client is not redirected');
  await page.goto(base + '/');
  await page.getByRole('heading', { name: 'Databases' }).waitFor();
  await page.waitForLoadState('networkidle');
  page.off('response', onResponse);
  const firstLoadJs = jsBytes.reduce((a, b) => a + b, 0);
  console.log(`studio: first load ${jsBytes.length} JavaScript file(s), ${(firstLoadJs / 1024).toFixed(1)} KB compressed`);
  assert.ok(firstLoadJs > 0, 'the first load downloads JavaScript');

  // 1. Databases: create one with sample data.
  step('databases');
  await page.getByLabel('New database').fill('e2e');
  await page.getByLabel('with sample data').check();
  await page.getByRole('button', { name: 'Create' }).click();
  await page.getByRole('status').filter({ hasText: "Database 'e2e' created with sample data." }).waitFor();
  const stats = (await api(`${base}/databases/e2e/stats`)).json;
  const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'e2e' }) });
  await row.getByRole('cell', { name: stats.CountOfDocuments.toLocaleString('en-US'), exact: true }).waitFor();
  await axe(page, 'databases');
  await shot(page, 'databases');

  // 2. Documents: a collection in the grid, open, edit, save, create, clone, delete, select many and delete.
  step('documents');
  await page.getByRole('link', { name: 'e2e', exact: true }).click();
  await page.getByRole('navigation', { name: 'Collections' }).getByRole('link', { name: /^Orders/ }).click();
  const grid = page.getByRole('grid', { name: 'Documents of Orders' });
  await grid.getByRole('gridcell', { name: 'orders/1-A', exact: true }).waitFor();
  await axe(page, 'documents');
  await shot(page, 'documents');
  await grid.getByRole('gridcell', { name: 'orders/1-A', exact: true }).dblclick();
  await page.getByRole('heading', { name: /Document orders\/1-A/ }).waitFor();
  const body = page.getByLabel('Document JSON');
  await body.getByText('"Freight"').first().waitFor();
  const original = (await api(`${base}/databases/e2e/docs?id=orders/1-A`)).json.Results[0];
  const { ['@metadata']: _meta, ...plain } = original;
  await fillEditor(body, JSON.stringify({ ...plain, Freight: 4242.5 }, null, 2));
  await axe(page, 'document editor');
  await shot(page, 'document-editor');
  await page.keyboard.press('Control+Enter');
  await page.getByRole('status').filter({ hasText: 'Saved orders/1-A.' }).waitFor();
  assert.equal((await api(`${base}/databases/e2e/docs?id=orders/1-A`)).json.Results[0].Freight, 4242.5, 'the edit is saved');
  // Invalid JSON is refused with a message and nothing is written.
  await fillEditor(body, '{ "Freight": ');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('alert').filter({ hasText: 'not valid JSON' }).waitFor();
  assert.equal((await api(`${base}/databases/e2e/docs?id=orders/1-A`)).json.Results[0].Freight, 4242.5);
  // Clone: a new document with the same body in the same collection.
  await page.goto(base + '/studio/db/e2e/edit?id=orders%2F2-A');
  await page.getByRole('button', { name: 'Clone' }).click();
  await page.getByRole('heading', { name: /Clone of orders\/2-A/ }).waitFor();
  await page.getByLabel('Document JSON').getByText('"Company"').waitFor();
  await page.getByLabel('Id').fill('orders/clone-1');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: /Document orders\/clone-1/ }).waitFor();
  const clone = (await api(`${base}/databases/e2e/docs?id=orders/clone-1`)).json.Results[0];
  assert.equal(clone['@metadata']['@collection'], 'Orders');
  assert.equal(clone.Company, (await api(`${base}/databases/e2e/docs?id=orders/2-A`)).json.Results[0].Company);
  // Delete (asks first; cancel keeps it).
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  assert.equal((await api(`${base}/databases/e2e/docs?id=orders/clone-1`)).status, 200, 'cancel keeps the document');
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('heading', { name: /^Documents/ }).waitFor();
  assert.equal((await api(`${base}/databases/e2e/docs?id=orders/clone-1`)).status, 404, 'the document is deleted');
  // Create a document in a new collection.
  await page.goto(base + '/studio/db/e2e/edit');
  await page.getByLabel('Id').fill('notes/1');
  await page.getByLabel('Collection').fill('Notes');
  await fillEditor(page.getByLabel('Document JSON'), '{ "Text": "hello from the Studio" }');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('heading', { name: /Document notes\/1/ }).waitFor();
  const note = (await api(`${base}/databases/e2e/docs?id=notes/1`)).json.Results[0];
  assert.equal(note.Text, 'hello from the Studio');
  assert.equal(note['@metadata']['@collection'], 'Notes');
  // The document's extensions: upload an attachment (and read it back), add a counter and increment it.
  await page.getByLabel('Add an attachment').setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello attachment') });
  await page.getByRole('list', { name: 'Attachments' }).getByRole('link', { name: 'hello.txt' }).waitFor();
  assert.equal(await (await fetch(`${base}/databases/e2e/attachments?id=notes/1&name=hello.txt`)).text(), 'hello attachment');
  await page.getByLabel('New counter').fill('Views');
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await page.getByRole('list', { name: 'Counters' }).getByText('Views = 1').waitFor();
  await page.getByRole('button', { name: 'Increment Views' }).click();
  await page.getByRole('list', { name: 'Counters' }).getByText('Views = 2').waitFor();
  assert.equal((await api(`${base}/databases/e2e/counters?docId=notes/1&counter=Views`)).json.Counters[0].TotalValue, 2);
  // Select many and delete.
  await api(`${base}/databases/e2e/bulk_docs`, 'POST', { Commands: [2, 3, 4].map((i) => ({ Id: `notes/${i}`, Type: 'PUT', Document: { Text: `note ${i}`, '@metadata': { '@collection': 'Notes' } } })) });
  await page.goto(base + '/studio/db/e2e/documents/Notes');
  const notes = page.getByRole('grid', { name: 'Documents of Notes' });
  await notes.getByRole('gridcell', { name: 'notes/4', exact: true }).waitFor();
  await notes.getByLabel('Select row 1', { exact: true }).check();
  await notes.getByLabel('Select row 2', { exact: true }).check();
  await page.getByRole('button', { name: 'Delete selected (2)' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByText('2 documents in Notes').waitFor();
  assert.equal((await api(`${base}/databases/e2e/collections/stats`)).json.Collections.Notes, 2);

  // A large collection scrolls with pages fetched on demand.
  step('a 20,000-document collection');
  for (let start = 0; start < 20_000; start += 5_000)
    await api(`${base}/databases/e2e/bulk_docs`, 'POST', { Commands: Array.from({ length: 5_000 }, (_, k) => ({ Id: `items/${start + k + 1}`, Type: 'PUT', Document: { N: start + k + 1, '@metadata': { '@collection': 'Items' } } })) });
  let pageRequests = 0;
  const countPages = (r) => { if (r.url().includes('/collections/docs?name=Items')) pageRequests++; };
  page.on('request', countPages);
  await page.goto(base + '/studio/db/e2e/documents/Items');
  const items = page.getByRole('grid', { name: 'Documents of Items' });
  await items.getByRole('gridcell', { name: 'items/1', exact: true }).waitFor();
  await items.evaluate((el) => { el.scrollTop = el.scrollHeight; });
  await items.getByRole('gridcell', { name: 'items/20000', exact: true }).waitFor();
  page.off('request', countPages);
  console.log(`studio: scrolled 20,000 documents end to end with ${pageRequests} page request(s)`);
  assert.ok(pageRequests <= 4, `pages are fetched on demand (${pageRequests} requests for 200 pages)`);

  // 3. Query: RQL, Ctrl+Enter, the grid and its statistics, JSON view, recent queries, a malformed query.
  step('query');
  await page.goto(base + '/studio/db/e2e/query');
  const rql = page.getByLabel('RQL query');
  const expected = (await api(`${base}/databases/e2e/queries`, 'POST', { Query: 'from Orders where Freight > 100', WaitForNonStaleResults: true })).json;
  await fillEditor(rql, 'from Orders where Freight > 100');
  await rql.press('Control+Enter');
  const statsLine = page.getByRole('status', { name: 'Query statistics' });
  await statsLine.getByText(`Total results: ${expected.TotalResults.toLocaleString('en-US')}`).waitFor();
  await statsLine.getByText(expected.IndexName).waitFor();
  const results = page.getByRole('grid', { name: 'Query results' });
  await results.getByRole('gridcell', { name: expected.Results[0]['@metadata']['@id'], exact: true }).waitFor();
  await axe(page, 'query');
  await shot(page, 'query');
  await page.getByRole('tab', { name: 'JSON' }).click();
  await page.getByLabel('Query results as JSON').getByText('"TotalResults"').waitFor();
  await page.getByRole('tab', { name: 'Results' }).click();
  await page.getByRole('complementary', { name: 'Recent queries' }).getByRole('button', { name: 'from Orders where Freight > 100' }).waitFor();
  // Completion offers collections after `from`.
  await fillEditor(rql, 'from Ord');
  await rql.press('End');
  await page.keyboard.press('Control+Space');
  await page.getByRole('option', { name: /Orders/ }).first().waitFor();
  await page.keyboard.press('Escape');
  // Parameters.
  await fillEditor(rql, 'from Orders where Company = $c');
  await page.getByText('Query parameters').click();
  await fillEditor(page.getByLabel('Query parameters (JSON)'), '{ "c": "companies/1-A" }');
  await page.getByRole('button', { name: /^Run/ }).click();
  const byCompany = (await api(`${base}/databases/e2e/queries`, 'POST', { Query: 'from Orders where Company = $c', QueryParameters: { c: 'companies/1-A' }, WaitForNonStaleResults: true })).json;
  await statsLine.getByText(`Total results: ${byCompany.TotalResults.toLocaleString('en-US')}`).waitFor();
  // 1,000 rows: the render time after the answer arrives.
  await api(`${base}/databases/e2e/queries`, 'POST', { Query: 'from Items where N > 0', WaitForNonStaleResults: true });
  await page.evaluate(() => { window.__studioQueryRender = undefined; });
  await fillEditor(rql, 'from Items where N > 0 order by N as long');
  await rql.press('Control+Enter');
  await statsLine.getByText('Total results: 20,000').waitFor();
  const render = await page.waitForFunction(() => window.__studioQueryRender?.rows === 1000 && window.__studioQueryRender).then((h) => h.jsonValue());
  console.log(`studio: a ${render.rows}-row query result rendered in ${render.ms.toFixed(1)} ms`);
  assert.equal(render.rows, 1000);
  // Malformed.
  await fillEditor(rql, 'from Orders where');
  await rql.press('Control+Enter');
  const bad = page.getByRole('alert').filter({ hasText: 'The query failed' });
  await bad.waitFor();
  assert.match(await bad.innerText(), /400: .*(Invalid query|expected)/);
  await shot(page, 'query-error');

  // 4. Indexes: a compile error at its line, then the fixed index becomes up to date; reset and delete ask first.
  step('indexes');
  await page.goto(base + '/studio/db/e2e/indexes/edit');
  await page.getByLabel('Name').fill('Orders/ByShipCity');
  await fillEditor(page.getByLabel('Map 1'), 'from o in docs.Orders\nselect new {\n    City = o.ShipTo.City +* 2\n}');
  await page.getByRole('button', { name: 'Save index' }).click();
  const compile = page.getByRole('alert').filter({ hasText: 'Map 1, line 3, column' });
  await compile.waitFor();
  await page.locator('.cm-lintRange-error').first().waitFor();
  await axe(page, 'index editor');
  await shot(page, 'index-compile-error');
  await fillEditor(page.getByLabel('Map 1'), 'from o in docs.Orders\nselect new {\n    City = o.ShipTo.City,\n    o.Freight\n}');
  await page.getByRole('button', { name: 'Add field' }).click();
  await page.getByLabel('Field 1 name').fill('City');
  await page.getByLabel('Field 1 indexing').selectOption('Search');
  await page.getByRole('button', { name: 'Save index' }).click();
  await page.getByRole('heading', { name: /^Indexes/ }).waitFor();
  const indexRow = page.locator('tr[data-index="Orders/ByShipCity"]');
  await indexRow.getByText('up to date').waitFor({ timeout: 60_000 });
  const indexStats = (await api(`${base}/databases/e2e/indexes/stats`)).json.Results.find((i) => i.Name === 'Orders/ByShipCity');
  assert.equal(indexStats.EntriesCount, stats.Collections?.Orders ?? indexStats.EntriesCount);
  await indexRow.getByRole('cell', { name: indexStats.EntriesCount.toLocaleString('en-US'), exact: true }).waitFor();
  const definition = (await api(`${base}/databases/e2e/indexes`)).json.Results.find((i) => i.Name === 'Orders/ByShipCity');
  assert.equal(definition.Fields.City.Indexing, 'Search');
  await axe(page, 'indexes');
  await shot(page, 'indexes');
  await page.getByRole('button', { name: 'Reset Orders/ByShipCity' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Reset' }).click();
  await indexRow.getByText('up to date').waitFor({ timeout: 60_000 });
  await page.getByRole('button', { name: 'Delete Orders/ByShipCity' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await indexRow.waitFor({ state: 'detached' });
  assert.equal((await api(`${base}/databases/e2e/indexes`)).json.Results.some((i) => i.Name === 'Orders/ByShipCity'), false);

  // 5. Tasks: patch by query and delete by query with progress; a script that does not parse; sample data refused.
  step('tasks');
  await page.goto(base + '/studio/db/e2e/tasks');
  await page.getByRole('heading', { name: /^Tasks/ }).waitFor();
  const opQuery = page.getByLabel('Operation query', { exact: true });
  await opQuery.getByText('update').waitFor();
  await fillEditor(opQuery, 'from Orders where Freight > $min update { this.Expensive = true; }');
  await page.getByText('Query parameters').click();
  await fillEditor(page.getByLabel('Operation query parameters (JSON)'), '{ "min": 500 }');
  await page.getByRole('button', { name: 'Run patch' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Patch' }).click();
  const patchOp = page.getByLabel(/^Operation \d+$/).first();
  await patchOp.getByText('Completed').waitFor();
  const expensive = (await api(`${base}/databases/e2e/queries`, 'POST', { Query: 'from Orders where Freight > 500', WaitForNonStaleResults: true })).json.TotalResults;
  const patchedCount = (await api(`${base}/databases/e2e/queries`, 'POST', { Query: 'from Orders where Expensive = true', WaitForNonStaleResults: true })).json.TotalResults;
  assert.equal(patchedCount, expensive, 'the patch changed exactly the matching orders');
  await patchOp.getByRole('status').filter({ hasText: `${expensive.toLocaleString('en-US')} of ${expensive.toLocaleString('en-US')} patched` }).waitFor();
  await axe(page, 'tasks');
  await shot(page, 'tasks');
  await fillEditor(opQuery, 'from Orders update { this.Freight = ; }');
  await page.getByRole('button', { name: 'Run patch' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Patch' }).click();
  await page.getByRole('alert').filter({ hasText: 'does not parse' }).waitFor();
  await page.getByLabel('Delete the matches').check();
  const deleteButton = page.getByRole('button', { name: 'Delete matching documents' });
  await deleteButton.waitFor();
  await fillEditor(opQuery, 'from Notes');
  await deleteButton.click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByLabel(/^Operation \d+$/).nth(1).waitFor(); // the new one is listed first
  await page.getByLabel(/^Operation \d+$/).first().getByText('Completed').waitFor();
  assert.equal((await api(`${base}/databases/e2e/collections/stats`)).json.Collections.Notes ?? 0, 0, 'delete by query removed the notes');
  await page.getByRole('button', { name: 'Create sample data' }).click();
  await page.getByRole('alert').filter({ hasText: 'already contains documents' }).waitFor();
  // Replication: a task to another database on this server is added, shows Active with no lag, and is deleted.
  await api(`${base}/admin/databases?name=e2e-copy`, 'PUT', { DatabaseName: 'e2e-copy' });
  const addForm = page.getByRole('form', { name: 'Add replication' });
  await addForm.getByLabel('Destination database').fill('e2e-copy');
  await addForm.getByRole('button', { name: 'Add replication' }).click();
  const replicationTasks = page.getByRole('table', { name: 'Replication tasks' });
  await replicationTasks.getByText('Active').waitFor();
  await replicationTasks.getByRole('status', { name: /^Lag of / }).filter({ hasText: /^0 etags$/ }).waitFor({ timeout: 60_000 });
  const copied = (await api(`${base}/databases/e2e-copy/stats`)).json.CountOfDocuments;
  assert.equal(copied, (await api(`${base}/databases/e2e/stats`)).json.CountOfDocuments, 'the copy holds every document');
  await axe(page, 'tasks-replication');
  await shot(page, 'tasks-replication');
  await replicationTasks.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByText('This database replicates nowhere yet.').waitFor();
  await api(`${base}/admin/databases?name=e2e-copy&hardDelete=true`, 'DELETE', { DatabaseNames: ['e2e-copy'], HardDelete: true });
  // ETL: a RavenDB ETL task into another database of this server shows Active with its last etag and no lag; a task
  // whose script throws shows the error naming the document; disable, reset (asking first) and delete.
  await api(`${base}/admin/databases?name=e2e-etl`, 'PUT', { DatabaseName: 'e2e-etl' });
  assert.equal((await api(`${base}/databases/e2e/admin/connection-strings`, 'PUT', { Name: 'to-e2e-etl', Type: 'Raven', Database: 'e2e-etl', TopologyDiscoveryUrls: [base] })).status, 200);
  const putEtl = (name, transformation, script) => api(`${base}/databases/e2e/admin/etl`, 'PUT', { Name: name, EtlType: 'Raven', ConnectionStringName: 'to-e2e-etl', Transforms: [{ Name: transformation, Collections: ['Orders'], Script: script }] });
  assert.equal((await putEtl('orders-copy', 'orders', 'loadToOrders({ Company: this.Company, Freight: this.Freight });')).status, 200);
  const etlTasks = page.getByRole('table', { name: 'ETL tasks' });
  await etlTasks.getByRole('status', { name: 'Status of orders-copy' }).filter({ hasText: 'Active' }).waitFor();
  await etlTasks.getByRole('status', { name: 'Lag of orders' }).filter({ hasText: /^0 etags$/ }).waitFor({ timeout: 60_000 });
  const orders = (await api(`${base}/databases/e2e/collections/stats`)).json.Collections.Orders;
  assert.equal((await api(`${base}/databases/e2e-etl/collections/stats`)).json.Collections.Orders, orders, 'the ETL loaded every order');
  assert.equal((await putEtl('broken', 'fails', 'throw new Error("no orders today");')).status, 200);
  await etlTasks.getByRole('alert', { name: 'Error of fails' }).filter({ hasText: /failed on document 'orders\/.*no orders today/ }).waitFor();
  await etlTasks.getByRole('status', { name: 'Status of broken' }).filter({ hasText: 'Reconnect' }).waitFor();
  await etlTasks.scrollIntoViewIfNeeded();
  await axe(page, 'tasks-etl');
  await shot(page, 'tasks-etl');
  await etlTasks.getByRole('row').filter({ hasText: 'orders-copy' }).getByRole('button', { name: 'Disable' }).click();
  await etlTasks.getByRole('status', { name: 'Status of orders-copy' }).filter({ hasText: 'Disabled' }).waitFor();
  await etlTasks.getByRole('button', { name: 'Reset orders' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Reset' }).click();
  for (const name of ['orders-copy', 'broken']) {
    await etlTasks.getByRole('row').filter({ hasText: name }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await etlTasks.getByRole('row').filter({ hasText: name }).waitFor({ state: 'detached' });
  }
  await page.getByText('No ETL tasks.').waitFor();
  await api(`${base}/admin/databases?name=e2e-etl&hardDelete=true`, 'DELETE', { DatabaseNames: ['e2e-etl'], HardDelete: true });

  // Subscriptions: one added from RQL is listed without a worker; disabled and enabled again (the server's state says
  // so), then deleted.
  const addSubscription = page.getByRole('form', { name: 'Add subscription' });
  await addSubscription.getByLabel('Subscription name').fill('expensive-orders');
  await addSubscription.getByLabel('Subscription query (RQL)').fill('from Orders where Freight > 500');
  await addSubscription.getByRole('button', { name: 'Add subscription' }).click();
  const subscriptions = page.getByRole('table', { name: 'Subscriptions' });
  const subscriptionState = subscriptions.getByRole('status', { name: 'State of expensive-orders' });
  await subscriptionState.filter({ hasText: 'No worker' }).waitFor();
  const subscriptionOf = async () => (await api(`${base}/databases/e2e/subscriptions`)).json.Results.find((x) => x.SubscriptionName === 'expensive-orders');
  assert.equal((await subscriptionOf()).Query, 'from Orders where Freight > 500');
  await subscriptions.getByRole('button', { name: 'Disable' }).click();
  await subscriptionState.filter({ hasText: 'Disabled' }).waitFor();
  assert.equal((await subscriptionOf()).Disabled, true, 'the subscription is disabled on the server');
  await axe(page, 'tasks-subscriptions');
  await subscriptions.scrollIntoViewIfNeeded();
  await shot(page, 'tasks-subscriptions');
  await subscriptions.getByRole('button', { name: 'Enable' }).click();
  await subscriptionState.filter({ hasText: 'No worker' }).waitFor();
  assert.equal((await subscriptionOf()).Disabled, false, 'the subscription is enabled again');
  await subscriptions.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByText('No subscriptions.', { exact: false }).waitFor();
  assert.equal(await subscriptionOf(), undefined, 'the subscription is deleted');

  // Import and export: the database exported as a .ravendbdump download, imported into a new database with the
  // upload's progress; the copy holds the same documents. A file that is not a dump is refused with the server's reason.
  const download = page.waitForEvent('download');
  await page.getByRole('button', { name: 'Export to a .ravendbdump' }).click();
  const dump = await (await download).path();
  assert.ok(statSync(dump).size > 0, 'the export downloaded a dump');
  await api(`${base}/admin/databases?name=e2e-import`, 'PUT', { DatabaseName: 'e2e-import' });
  await page.goto(base + '/studio/db/e2e-import/tasks');
  await page.getByRole('heading', { name: /^Tasks/ }).waitFor();
  await page.getByLabel('Import a .ravendbdump').setInputFiles(dump);
  await page.getByRole('button', { name: 'Import', exact: true }).click();
  const imported = page.getByRole('status').filter({ hasText: /^Imported [\d,]+ documents/ });
  await imported.waitFor({ timeout: 60_000 });
  const sourceCount = (await api(`${base}/databases/e2e/collections/stats`)).json.CountOfDocuments;
  assert.equal((await api(`${base}/databases/e2e-import/collections/stats`)).json.CountOfDocuments, sourceCount, 'the import holds the exported documents');
  assert.ok((await imported.textContent()).startsWith(`Imported ${sourceCount.toLocaleString('en-US')} documents`), 'the screen says what was imported');
  await axe(page, 'tasks-import');
  await shot(page, 'tasks-import');
  await page.getByLabel('Import a .ravendbdump').setInputFiles({ name: 'not-a-dump.ravendbdump', mimeType: 'application/octet-stream', buffer: Buffer.from('not a dump') });
  await page.getByRole('button', { name: 'Import', exact: true }).click();
  await page.getByRole('alert').filter({ hasText: /^The import did not complete: 400: / }).waitFor();
  await api(`${base}/admin/databases?name=e2e-import&hardDelete=true`, 'DELETE', { DatabaseNames: ['e2e-import'], HardDelete: true });
  // Database settings: expiration and revisions saved from their JSON editors (the server's configuration says so);
  // text that is not JSON is refused in the page.
  await page.goto(base + '/studio/db/e2e/tasks');
  await page.locator('summary', { hasText: 'Document expiration' }).click();
  const expiration = page.getByLabel('Document expiration (JSON)');
  await expiration.getByText('DeleteFrequencyInSec').waitFor();
  await fillEditor(expiration, '{ "Disabled": false, "DeleteFrequencyInSec": 30 }');
  await page.getByRole('button', { name: 'Save document expiration' }).click();
  await page.getByRole('status').filter({ hasText: 'Document expiration saved.' }).waitFor();
  assert.equal((await api(`${base}/databases/e2e/expiration/config`)).json.DeleteFrequencyInSec, 30);
  await page.locator('summary', { hasText: /^Revisions$/ }).click();
  const revisions = page.getByLabel('Revisions (JSON)');
  await revisions.getByText('MinimumRevisionsToKeep').waitFor();
  await fillEditor(revisions, '{ "Default": null, "Collections": { "Orders": { "Disabled": false, "MinimumRevisionsToKeep": 3 } } }');
  await page.getByRole('button', { name: 'Save revisions' }).click();
  await page.getByRole('status').filter({ hasText: 'Revisions saved.' }).waitFor();
  assert.equal((await api(`${base}/databases/e2e/revisions/config`)).json.Collections.Orders.MinimumRevisionsToKeep, 3);
  await page.locator('summary', { hasText: 'Time series' }).click();
  await page.locator('summary', { hasText: 'Client configuration' }).click();
  await page.getByLabel('Client configuration (JSON)').getByText('MaxNumberOfRequestsPerSession').waitFor();
  await axe(page, 'tasks-settings');
  await page.getByRole('heading', { name: 'Database settings' }).scrollIntoViewIfNeeded();
  await shot(page, 'tasks-settings');
  await fillEditor(revisions, '{ "Default": ');
  await page.getByRole('button', { name: 'Save revisions' }).click();
  await page.getByRole('alert').filter({ hasText: 'This is not JSON' }).waitFor();
  // Backups: a one-time backup into a folder, restored into a new database (the same documents); a periodic task on
  // a cron schedule listed with its next run, run now (its last full backup then set), and deleted.
  const backupRoot = mkdtempSync(join(tmpdir(), 'ravenlite-studio-backup-'));
  await page.getByLabel('Backup folder').fill(backupRoot);
  await page.getByRole('button', { name: 'Back up now' }).click();
  await page.getByRole('status').filter({ hasText: /^Backup written to / }).waitFor({ timeout: 60_000 });
  assert.ok((await page.getByLabel('Backup to restore (its folder)').inputValue()).startsWith(backupRoot), 'the restore form takes the backup just written');
  await page.getByLabel('New database name').fill('e2e-restored');
  await page.getByRole('button', { name: 'Restore', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'Restored into the new database e2e-restored.' }).waitFor({ timeout: 60_000 });
  assert.equal((await api(`${base}/databases/e2e-restored/collections/stats`)).json.CountOfDocuments, (await api(`${base}/databases/e2e/collections/stats`)).json.CountOfDocuments, 'the restored database holds the backed-up documents');
  await page.getByLabel('Periodic backup name').fill('nightly');
  await page.getByRole('button', { name: 'Add periodic backup' }).click();
  const backups = page.getByRole('table', { name: 'Periodic backups' });
  await backups.getByRole('row').filter({ hasText: 'nightly' }).filter({ hasText: '(full)' }).waitFor();
  await backups.getByRole('button', { name: 'Run now' }).click();
  await backups.getByRole('status', { name: 'Last full backup of nightly' }).filter({ hasNotText: 'never' }).waitFor({ timeout: 60_000 });
  await axe(page, 'tasks-backups');
  await backups.scrollIntoViewIfNeeded();
  await shot(page, 'tasks-backups');
  await backups.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await page.getByText('No periodic backups.').waitFor();
  await api(`${base}/admin/databases?name=e2e-restored&hardDelete=true`, 'DELETE', { DatabaseNames: ['e2e-restored'], HardDelete: true });
  rmSync(backupRoot, { recursive: true, force: true });

  // 6. Dashboard: live charts fill while writes come in.
  step('dashboard');
  await page.goto(base + '/studio/dashboard');
  const writer = (async () => {
    for (let i = 0; i < 8; i++) {
      await api(`${base}/databases/e2e/bulk_docs`, 'POST', { Commands: Array.from({ length: 200 }, (_, k) => ({ Id: `ticks/${i}-${k}`, Type: 'PUT', Document: { I: i, '@metadata': { '@collection': 'Ticks' } } })) });
      await new Promise((r) => setTimeout(r, 400));
    }
  })();
  await page.getByRole('status', { name: 'Current values' }).waitFor();
  await writer;
  await page.waitForFunction(() => {
    const strong = [...document.querySelectorAll('[aria-label="Current values"] strong')];
    return strong.length > 0 && document.querySelectorAll('.chart canvas').length >= 6;
  });
  await page.waitForTimeout(1500);
  await axe(page, 'dashboard');
  await shot(page, 'dashboard');

  // 7. Storage: trees, the page map, journal records.
  step('storage');
  await page.goto(base + '/studio/db/e2e/storage');
  const trees = page.getByRole('table', { name: 'B+Trees' });
  await trees.getByRole('cell', { name: 'Docs', exact: true }).waitFor();
  await page.getByRole('img', { name: /Map of the data file/ }).waitFor();
  const fileLine = page.getByRole('status', { name: 'Data file' });
  for (const label of ['Used', 'Free', 'Pending reuse', 'Waiting for flush'])
    assert.match(await fileLine.getByText(label, { exact: false }).first().innerText(), new RegExp(`^${label} [\\d,]+$`), `storage view: ${label}`);
  await page.getByRole('table', { name: 'Journal records' }).getByRole('row').nth(1).waitFor();
  await axe(page, 'storage');
  await shot(page, 'storage');

  // Wide screen.
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.goto(base + '/studio/db/e2e/documents/Orders');
  await page.getByRole('grid', { name: 'Documents of Orders' }).getByRole('gridcell', { name: 'orders/3-A', exact: true }).waitFor();
  await axe(page, 'documents at 1920×1080');
  await shot(page, 'documents-1920');
  await page.goto(base + '/studio/db/e2e/storage');
  await page.getByRole('img', { name: /Map of the data file/ }).waitFor();
  await axe(page, 'storage at 1920×1080');
  await shot(page, 'storage-1920');
  for (const [screen, heading] of [['/studio/', /^Databases/], ['/studio/db/e2e/query', /^Query/], ['/studio/db/e2e/indexes', /^Indexes/],
    ['/studio/db/e2e/indexes/edit', /^New index/], ['/studio/db/e2e/tasks', /^Tasks/], ['/studio/dashboard', /^Dashboard/], ['/studio/db/e2e/edit?id=orders%2F3-A', /^Document/]]) {
    await page.goto(base + screen);
    await page.getByRole('heading', { name: heading }).first().waitFor();
    await page.waitForLoadState('networkidle');
    await axe(page, `${screen} at 1920×1080`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `${screen} at 1920×1080 scrolls sideways by ${overflow} px`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });

  // 7. Cluster: a second server is added as node B from the Studio; a database placed on both lists both as members.
  step('cluster');
  const secondDir = mkdtempSync(join(tmpdir(), 'ravenlite-studio-e2e-b-'));
  const second = await startServer(secondDir);
  try {
    await page.goto(base + '/studio/cluster');
    await page.getByRole('heading', { name: /^Cluster/ }).waitFor();
    const nodesTable = page.getByRole('table', { name: 'Nodes' });
    await nodesTable.locator('tr[data-node="A"]').getByText('Leader').waitFor();
    const addNode = page.getByRole('form', { name: 'Add a node' });
    await addNode.getByLabel('Server URL').fill(second.url);
    await addNode.getByRole('button', { name: 'Add node' }).click();
    await page.getByRole('status').filter({ hasText: 'as node B' }).waitFor({ timeout: 60_000 });
    await nodesTable.locator('tr[data-node="B"]').waitFor();
    const pair = await api(`${base}/admin/databases?name=e2e-pair&replicationFactor=2`, 'PUT', { DatabaseName: 'e2e-pair' });
    assert.equal(pair.status, 201, JSON.stringify(pair.json));
    await page.getByRole('table', { name: 'Database groups' }).locator('tr[data-database="e2e-pair"]').getByText('A (Member), B (Member)').waitFor({ timeout: 30_000 });
    await axe(page, 'cluster');
    await shot(page, 'cluster');
  } finally {
    second.child.kill('SIGKILL');
    rmSync(secondDir, { recursive: true, force: true });
  }

  assert.deepEqual(pageErrors, [], 'no uncaught errors in the page');

  // 8. A stopped server: the Studio says so instead of going blank.
  step('stopped server');
  await page.goto(base + '/studio/');
  await page.getByRole('link', { name: 'e2e', exact: true }).waitFor();
  server.child.kill('SIGKILL');
  await new Promise((r) => server.child.once('exit', r));
  server = null;
  await page.getByRole('link', { name: 'Dashboard' }).click();
  await page.getByRole('alert').filter({ hasText: 'The server is not reachable' }).waitFor({ timeout: 15_000 });
  await shot(page, 'server-stopped');
  console.log('studio: ok');
} catch (e) {
  console.error(e);
  process.exitCode = 1;
  const failure = join(tmpdir(), 'ravenlite-studio-e2e-failure.png');
  await page?.screenshot({ path: failure }).then(() => console.error('screenshot of the failure: ' + failure), () => undefined);
  // The screenshot stays on the machine that ran the test; what a CI log needs is in words.
  const shown = await page?.evaluate(() => document.querySelector('main')?.innerText ?? document.body.innerText).catch(() => null);
  if (shown != null) console.error('--- the page showed:\n' + shown.slice(0, 4000));
  if (pageErrors.length) console.error('--- uncaught errors in the page:\n' + pageErrors.join('\n'));
  console.error('--- the Studio\'s last requests:\n' + requests.join('\n'));
  if (server) console.error('--- the server printed (last 4,000 characters):\n' + server.output().slice(-4000));
} finally {
  await browser?.close();
  if (server) server.child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
}
