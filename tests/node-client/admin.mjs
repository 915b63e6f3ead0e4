// Index and database administration through RavenDB's official Node client (npm ravendb 7.2.x): index lock modes
// (a LockedIgnore index keeps its definition, a LockedError one refuses a new one), priorities, disable/enable,
// stop/start, indexing status, errors; the database record; client configuration (the session's request limit set
// on the server reaches the client through Refresh-Client-Configuration); database settings (applied when the
// database reopens); detailed statistics; database names; build number; compaction (an operation; documents intact).
// Usage: node admin.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, PutIndexesOperation, SetIndexesLockOperation, SetIndexesPriorityOperation,
  DisableIndexOperation, EnableIndexOperation, GetIndexingStatusOperation, StopIndexingOperation, StartIndexingOperation,
  GetIndexErrorsOperation, GetDatabaseRecordOperation, PutClientConfigurationOperation, GetClientConfigurationOperation,
  PutDatabaseSettingsOperation, GetDatabaseSettingsOperation, GetDetailedStatisticsOperation, CompactDatabaseOperation,
  GetDatabaseNamesOperation, GetBuildNumberOperation, GetIndexOperation,
} from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("admin test timed out"); process.exit(3); }, 120_000);
class Item { constructor(name, n) { this.name = name; this.n = n; } }
const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  {
    const s = store.openSession();
    for (let i = 1; i <= 200; i++)
      await s.store(new Item("item " + i, i), `items/${i}`);
    await s.saveChanges();
  }
  const byN = { name: "Items/ByN", maps: new Set(["from i in docs.Items select new { i.n }"]) };
  await store.maintenance.send(new PutIndexesOperation(byN));

  // Lock modes.
  await store.maintenance.send(new SetIndexesLockOperation("Items/ByN", "LockedIgnore"));
  await store.maintenance.send(new PutIndexesOperation({ name: "Items/ByN", maps: new Set(["from i in docs.Items select new { i.name }"]) }));
  let definition = await store.maintenance.send(new GetIndexOperation("Items/ByN"));
  assert.equal(definition.lockMode, "LockedIgnore");
  assert.ok([...definition.maps][0].includes("i.n }"), "a LockedIgnore index keeps its definition");
  await store.maintenance.send(new SetIndexesLockOperation("Items/ByN", "LockedError"));
  await assert.rejects(store.maintenance.send(new PutIndexesOperation({ name: "Items/ByN", maps: new Set(["from i in docs.Items select new { i.name }"]) })), /locked/);
  await store.maintenance.send(new SetIndexesLockOperation("Items/ByN", "Unlock"));

  // Priority, disable/enable, stop/start, status.
  await store.maintenance.send(new SetIndexesPriorityOperation("Items/ByN", "High"));
  assert.equal((await store.maintenance.send(new GetIndexOperation("Items/ByN"))).priority, "High");
  await store.maintenance.send(new DisableIndexOperation("Items/ByN"));
  let status = await store.maintenance.send(new GetIndexingStatusOperation());
  assert.equal(status.indexes.find(i => i.name === "Items/ByN").status, "Disabled");
  await store.maintenance.send(new EnableIndexOperation("Items/ByN"));
  await store.maintenance.send(new StopIndexingOperation());
  status = await store.maintenance.send(new GetIndexingStatusOperation());
  assert.equal(status.status, "Paused");
  await store.maintenance.send(new StartIndexingOperation());
  status = await store.maintenance.send(new GetIndexingStatusOperation());
  assert.equal(status.status, "Running");
  assert.equal(status.indexes.find(i => i.name === "Items/ByN").status, "Running");
  const q = store.openSession();
  assert.equal((await q.query({ indexName: "Items/ByN" }).whereGreaterThan("n", 150).waitForNonStaleResults().all()).length, 50);
  const errors = await store.maintenance.send(new GetIndexErrorsOperation(["Items/ByN"]));
  assert.equal(errors[0].errors.length, 0);

  // The record, client configuration (it reaches the client), settings.
  const record = await store.maintenance.server.send(new GetDatabaseRecordOperation(database));
  assert.equal(record.databaseName, database);
  assert.ok(record.indexes["Items/ByN"]);
  await store.maintenance.send(new PutClientConfigurationOperation({ maxNumberOfRequestsPerSession: 3, disabled: false }));
  const client = await store.maintenance.send(new GetClientConfigurationOperation());
  assert.equal(client.configuration.maxNumberOfRequestsPerSession, 3);
  {
    const s = store.openSession();
    await s.load("items/1"); // its answer carries Refresh-Client-Configuration; the client fetches the configuration
  }
  // The refresh runs beside that request: within a second a session may make only three requests.
  let limited = null;
  for (let i = 0; i < 50 && !limited; i++) {
    const s = store.openSession();
    await s.load("items/1");
    await s.load("items/2");
    await s.load("items/3");
    try { await s.load("items/4"); } catch (e) { limited = e; }
    if (!limited) await new Promise(r => setTimeout(r, 20));
  }
  assert.ok(limited && /maximum number of requests/i.test(limited.message), String(limited));
  await store.maintenance.send(new PutClientConfigurationOperation({ maxNumberOfRequestsPerSession: 30, disabled: false }));
  await store.maintenance.server.send(new PutDatabaseSettingsOperation(database, { "MergerMaxOperations": "512" }));
  let settings;
  for (let i = 0; i < 100; i++) {
    try { settings = await store.maintenance.send(new GetDatabaseSettingsOperation(database)); break; } catch { await new Promise(r => setTimeout(r, 50)); }
  }
  assert.equal(settings.settings["MergerMaxOperations"], "512");
  // A RavenDB setting RavenLite does not use is kept as sent and reads back.
  await store.maintenance.server.send(new PutDatabaseSettingsOperation(database, { "Indexing.MapBatchSize": "128", "MergerMaxOperations": "512" }));
  let kept = null;
  for (let i = 0; i < 100 && kept?.settings?.["Indexing.MapBatchSize"] !== "128"; i++) {
    try { kept = await store.maintenance.send(new GetDatabaseSettingsOperation(database)); } catch { await new Promise(r => setTimeout(r, 50)); }
  }
  assert.equal(kept.settings["Indexing.MapBatchSize"], "128");

  // Statistics, names, build.
  const detailed = await store.maintenance.send(new GetDetailedStatisticsOperation());
  assert.equal(detailed.countOfDocuments, 200);
  assert.equal(typeof detailed.countOfIdentities, "number");
  assert.equal(typeof detailed.countOfCompareExchange, "number");
  const names = await store.maintenance.server.send(new GetDatabaseNamesOperation(0, 100));
  assert.ok(names.includes(database));
  const build = await store.maintenance.server.send(new GetBuildNumberOperation());
  assert.ok(build.productVersion);

  // Compaction: delete most documents, compact, everything left is there.
  {
    const s = store.openSession();
    for (let i = 1; i <= 180; i++)
      await s.delete(`items/${i}`);
    await s.saveChanges();
  }
  const compact = await store.maintenance.server.send(new CompactDatabaseOperation({ databaseName: database, documents: true, indexes: ["Items/ByN"] }));
  await compact.waitForCompletion();
  const after = store.openSession();
  assert.equal((await after.load("items/190")).n, 190);
  assert.equal(await after.load("items/5"), null);
  assert.equal((await after.query({ indexName: "Items/ByN" }).whereGreaterThan("n", 150).waitForNonStaleResults().all()).length, 20);
  console.log("admin: ok (lock modes, priority, disable/enable, stop/start, record, client configuration, settings, stats, compaction)");
} finally {
  store.dispose();
  clearTimeout(timeout);
}
