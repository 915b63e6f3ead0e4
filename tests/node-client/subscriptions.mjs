// Data subscriptions through RavenDB's official Node client (npm ravendb 7.2.6): create (from a collection, with a
// where clause and a JavaScript select; named; starting at LastDocument), getSubscriptions / getSubscriptionState, a
// worker receiving every matching document in batches (maxDocsPerBatch) and acknowledging them, new documents arriving
// while it runs, a second worker refused (OpenIfFree → SubscriptionInUseException), TakeOver, resuming after the
// worker is disposed from the acknowledged position (nothing skipped, nothing acknowledged sent again),
// disable/enable, dropConnection, delete, a missing subscription (SubscriptionDoesNotExistException), and counters
// and time series included in batches (a session on a batch makes no request for them).
// Usage: node subscriptions.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, ConfigureRevisionsOperation, RevisionsConfiguration, RevisionsCollectionConfiguration } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("subscriptions test timed out"); process.exit(3); }, 120_000);
class Order { constructor(company, freight) { this.company = company; this.freight = freight; } }

async function until(predicate, what) {
  for (let i = 0; i < 400; i++) {
    if (predicate())
      return;
    await new Promise(r => setTimeout(r, 25));
  }
  assert.fail("timed out waiting for " + what);
}

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  {
    const bulk = store.bulkInsert();
    for (let i = 1; i <= 300; i++)
      await bulk.store(new Order(`companies/${i % 3}`, i), `orders/${i}`);
    await bulk.finish();
  }
  const name = await store.subscriptions.create({ name: "BigOrders", query: "from Orders where freight > 100" });
  assert.equal(name, "BigOrders");
  const projected = await store.subscriptions.create({ query: "from Orders as o where o.company = 'companies/1' select { Company: o.company, Double: o.freight * 2 }" });
  const states = await store.subscriptions.getSubscriptions(0, 10);
  assert.deepEqual(states.map(s => s.subscriptionName).sort(), [projected, "BigOrders"].sort());
  await assert.rejects(store.subscriptions.create({ name: "BigOrders", query: "from Orders" }), /already exists/);
  // A collection with no documents yet is fine (applications subscribe before they store); a bad query is not.
  const early = await store.subscriptions.create({ query: "from Invoices" });
  await store.subscriptions.delete(early);
  await assert.rejects(store.subscriptions.create({ query: "from Orders where" }), /InvalidQueryException|Invalid query|expected/);

  // A worker gets every matching document once, in batches of at most 50, and acknowledges them.
  const seen = new Map();
  let batches = 0, maxBatch = 0;
  const worker = store.subscriptions.getSubscriptionWorker({ subscriptionName: "BigOrders", maxDocsPerBatch: 50 });
  worker.on("batch", (batch, callback) => {
    batches++;
    maxBatch = Math.max(maxBatch, batch.items.length);
    for (const item of batch.items)
      seen.set(item.id, (seen.get(item.id) ?? 0) + 1);
    callback();
  });
  let workerError = null;
  worker.on("error", e => { workerError = e; });
  await until(() => seen.size === 200, "the first 200 orders");
  assert.ok(maxBatch <= 50 && batches >= 4, `${batches} batches, largest ${maxBatch}`);
  assert.ok([...seen.values()].every(n => n === 1));
  assert.ok(!seen.has("orders/100") && seen.has("orders/101"));

  // New documents reach the running worker.
  {
    const s = store.openSession();
    await s.store(new Order("companies/1", 1000), "orders/new-1");
    await s.store(new Order("companies/1", 5), "orders/small");
    await s.saveChanges();
  }
  await until(() => seen.has("orders/new-1"), "a document written while the worker runs");
  assert.ok(!seen.has("orders/small"));

  // A second worker with OpenIfFree is refused while the first is connected.
  const second = store.subscriptions.getSubscriptionWorker({ subscriptionName: "BigOrders", strategy: "OpenIfFree" });
  const secondError = await new Promise(resolve => { second.on("error", resolve); second.on("batch", (b, cb) => cb()); });
  assert.equal(secondError.name, "SubscriptionInUseException");
  await second.dispose();

  await until(async () => true, "");
  const state = await store.subscriptions.getSubscriptionState("BigOrders");
  assert.ok(state.changeVectorForNextBatchStartingPoint, JSON.stringify(state));
  await worker.dispose();
  assert.equal(workerError, null, String(workerError));

  // Changed while no worker ran: resumes after the acknowledged position, sends the changed document again, skips nothing.
  {
    const s = store.openSession();
    const o = await s.load("orders/150");
    o.freight = 151;
    await s.store(new Order("companies/2", 2000), "orders/new-2");
    await s.saveChanges();
  }
  const resumed = [];
  const worker2 = store.subscriptions.getSubscriptionWorker({ subscriptionName: "BigOrders", strategy: "TakeOver" });
  worker2.on("batch", (batch, cb) => { for (const i of batch.items) resumed.push(i.id); cb(); });
  await until(() => resumed.length >= 2, "the documents written since");
  await new Promise(r => setTimeout(r, 300));
  assert.deepEqual(resumed.sort(), ["orders/150", "orders/new-2"]);

  // TakeOver: a new worker takes the subscription from worker2.
  const taken = [];
  const worker3 = store.subscriptions.getSubscriptionWorker({ subscriptionName: "BigOrders", strategy: "TakeOver" });
  worker3.on("batch", (batch, cb) => { for (const i of batch.items) taken.push(i.id); cb(); });
  const worker2Error = await new Promise(resolve => worker2.on("error", resolve));
  assert.equal(worker2Error.name, "SubscriptionInUseException");
  {
    const s = store.openSession();
    await s.store(new Order("companies/0", 3000), "orders/new-3");
    await s.saveChanges();
  }
  await until(() => taken.includes("orders/new-3"), "the taking-over worker's batch");
  await worker3.dispose();

  // The projection subscription.
  const rows = [];
  const pw = store.subscriptions.getSubscriptionWorker({ subscriptionName: projected });
  pw.on("batch", (batch, cb) => { for (const i of batch.items) rows.push(i.result); cb(); });
  await until(() => rows.length === 102, "the projected documents (100 + 2 new)");
  assert.ok(rows.every(r => r.Company === "companies/1" && typeof r.Double === "number"));
  await pw.dispose();

  // Disable / enable / drop / delete.
  await store.subscriptions.disable("BigOrders");
  assert.equal((await store.subscriptions.getSubscriptionState("BigOrders")).disabled, true);
  const disabledWorker = store.subscriptions.getSubscriptionWorker({ subscriptionName: "BigOrders" });
  const disabledError = await new Promise(resolve => { disabledWorker.on("error", resolve); disabledWorker.on("batch", (b, cb) => cb()); });
  assert.equal(disabledError.name, "SubscriptionClosedException");
  await store.subscriptions.enable("BigOrders");
  const w4 = store.subscriptions.getSubscriptionWorker({ subscriptionName: "BigOrders" });
  let w4Connected = false;
  w4.on("onEstablishedSubscriptionConnection", () => { w4Connected = true; });
  w4.on("batch", (b, cb) => cb());
  await until(() => w4Connected, "the re-enabled subscription's worker");
  const dropped = new Promise(resolve => w4.on("error", resolve));
  await store.subscriptions.dropConnection("BigOrders");
  assert.equal((await dropped).name, "SubscriptionClosedException");
  await store.subscriptions.delete("BigOrders");
  const gone = store.subscriptions.getSubscriptionWorker({ subscriptionName: "BigOrders" });
  const goneError = await new Promise(resolve => { gone.on("error", resolve); gone.on("batch", (b, cb) => cb()); });
  assert.equal(goneError.name, "SubscriptionDoesNotExistException");
  for (const w of [disabledWorker, w4, gone, worker2])
    await w.dispose();

  // A subscription on revisions: each item is {current, previous} of one change, in order.
  const revisionsConfig = new RevisionsConfiguration();
  const notesConfig = new RevisionsCollectionConfiguration();
  notesConfig.disabled = false;
  revisionsConfig.collections = new Map([["Notes", notesConfig]]);
  await store.maintenance.send(new ConfigureRevisionsOperation(revisionsConfig));
  {
    const s = store.openSession();
    await s.store({ text: "v1", "@metadata": { "@collection": "Notes" } }, "notes/1");
    await s.saveChanges();
  }
  const revName = await store.subscriptions.createForRevisions({ name: "NoteHistory", query: "from Notes (Revisions = true) where text != 'skip'" });
  assert.equal(revName, "NoteHistory");
  for (const text of ["v2", "skip", "v3"]) {
    const s = store.openSession();
    const note = await s.load("notes/1");
    note.text = text;
    await s.saveChanges();
  }
  const history = [];
  const rw = store.subscriptions.getSubscriptionWorkerForRevisions({ subscriptionName: "NoteHistory" });
  rw.on("batch", (batch, cb) => { for (const item of batch.items) history.push([item.result.previous?.text ?? null, item.result.current.text, item.id]); cb(); });
  await until(() => history.length === 3, "three revisions (the 'skip' one filtered out)");
  assert.deepEqual(history.map(h => h.slice(0, 2)), [[null, "v1"], ["v1", "v2"], ["skip", "v3"]]);
  assert.ok(history.every(h => h[2] === "notes/1"));
  await rw.dispose();

  // Counters and time series included in batches: a session opened on a batch reads them without a request.
  {
    const s = store.openSession();
    await s.store({ name: "Sensor A", "@metadata": { "@collection": "Sensors" } }, "sensors/1");
    s.countersFor("sensors/1").increment("Reads", 7);
    s.timeSeriesFor("sensors/1", "Temp").append(new Date(Date.UTC(2026, 0, 1)), 21.5);
    await s.saveChanges();
  }
  const withIncludes = await store.subscriptions.create({
    name: "SensorsWithExtras", documentType: Object,
    query: "from Sensors include counters('Reads'), timeseries('Temp', null, null)",
  });
  const iw = store.subscriptions.getSubscriptionWorker({ subscriptionName: withIncludes });
  const extras = [];
  iw.on("batch", async (batch, cb) => {
    try {
      const session = batch.openSession();
      const before = session.advanced.numberOfRequests;
      const reads = await session.countersFor("sensors/1").get("Reads");
      const temps = await session.timeSeriesFor("sensors/1", "Temp").get();
      extras.push({ reads, temps: temps.map(t => t.value), requests: session.advanced.numberOfRequests - before });
      cb();
    } catch (e) {
      cb(e);
    }
  });
  await until(() => extras.length === 1, "a batch with counters and time series included");
  assert.deepEqual(extras[0], { reads: 7, temps: [21.5], requests: 0 });
  await iw.dispose();
  console.log(`subscriptions: ok (${seen.size} documents in ${batches} batches, resumed ${resumed.length}, projected ${rows.length}, ${history.length} revisions)`);
} finally {
  store.dispose();
  clearTimeout(timeout);
}
