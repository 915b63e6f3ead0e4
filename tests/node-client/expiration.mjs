// Expiration and refresh through RavenDB's official Node client (npm ravendb 7.2.6): ConfigureExpirationOperation and
// ConfigureRefreshOperation, documents with @expires in the past deleted by the background task (and one in the
// future kept), documents with @refresh rewritten without it (a new change vector), an expiration time removed by an
// update (moved to the future) before it passes keeping the document. Usage: node expiration.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, ConfigureExpirationOperation, ConfigureRefreshOperation } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("expiration test timed out"); process.exit(3); }, 120_000);
class Item { constructor(name) { this.name = name; } }
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function waitFor(check, what) {
  for (let i = 0; i < 150; i++) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error("timed out waiting for " + what);
}

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const past = new Date(Date.now() - 60_000).toISOString();
  const future = new Date(Date.now() + 3_600_000).toISOString();
  {
    const s = store.openSession();
    for (const [id, expires] of [["items/old", past], ["items/new", future], ["items/saved", past]]) {
      const item = new Item(id);
      await s.store(item, id);
      s.advanced.getMetadataFor(item)["@expires"] = expires;
    }
    const fresh = new Item("fresh");
    await s.store(fresh, "items/fresh");
    s.advanced.getMetadataFor(fresh)["@refresh"] = past;
    await s.saveChanges();
    // items/saved has its @expires moved to the future before the task runs: it stays
    const s2 = store.openSession();
    const saved = new Item("items/saved");
    await s2.store(saved, "items/saved");
    s2.advanced.getMetadataFor(saved)["@expires"] = future;
    await s2.saveChanges();
  }
  const before = store.openSession();
  const freshCv = before.advanced.getChangeVectorFor(await before.load("items/fresh"));
  await store.maintenance.send(new ConfigureExpirationOperation({ disabled: false, deleteFrequencyInSec: 1 }));
  await store.maintenance.send(new ConfigureRefreshOperation({ disabled: false, refreshFrequencyInSec: 1 }));
  await waitFor(async () => (await store.openSession().load("items/old")) === null, "items/old to expire");
  await waitFor(async () => {
    const s = store.openSession();
    const f = await s.load("items/fresh");
    return s.advanced.getMetadataFor(f)["@refresh"] === undefined;
  }, "items/fresh to be refreshed");
  const s = store.openSession();
  assert.ok(await s.load("items/new"));
  assert.ok(await s.load("items/saved"));
  const fresh = await s.load("items/fresh");
  assert.notEqual(s.advanced.getChangeVectorFor(fresh), freshCv);
  assert.equal(fresh.name, "fresh");
  console.log("expiration: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
