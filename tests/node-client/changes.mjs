// The changes API through RavenDB's official Node client (npm ravendb 7.2.6): store.changes() with forAllDocuments,
// forDocument, forDocumentsStartingWith, forDocumentsInCollection, forIndex / forAllIndexes, forAllOperations (a delete
// by query), forCountersOfDocument / forCounter, forTimeSeriesOfDocument; unsubscribing; events carrying what RavenDB's
// carry (type, id, collection, change vector; counter value; series span). Usage: node changes.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation, DeleteByQueryOperation } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("changes test timed out"); process.exit(3); }, 120_000);
class User { constructor(name) { this.name = name; } }
class Order { constructor(total) { this.total = total; } }

async function until(predicate, what) {
  for (let i = 0; i < 200; i++) {
    if (predicate())
      return;
    await new Promise(r => setTimeout(r, 25));
  }
  assert.fail("timed out waiting for " + what);
}

const store = new DocumentStore(url, database);
store.initialize();
await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
const changes = store.changes();
try {
  await changes.ensureConnectedNow();
  const all = [], one = [], prefixed = [], orders = [], indexEvents = [], operations = [], counters = [], likes = [], series = [];
  const allObs = changes.forAllDocuments(); allObs.on("data", c => all.push(c));
  const onOne = c => one.push(c);
  const oneObs = changes.forDocument("users/1"); oneObs.on("data", onOne);
  const prefObs = changes.forDocumentsStartingWith("users/"); prefObs.on("data", c => prefixed.push(c));
  const colObs = changes.forDocumentsInCollection("Orders"); colObs.on("data", c => orders.push(c));
  const idxObs = changes.forAllIndexes(); idxObs.on("data", c => indexEvents.push(c));
  const opObs = changes.forAllOperations(); opObs.on("data", c => operations.push(c));
  const cObs = changes.forCountersOfDocument("users/1"); cObs.on("data", c => counters.push(c));
  const likeObs = changes.forCounter("Likes"); likeObs.on("data", c => likes.push(c));
  const tsObs = changes.forTimeSeriesOfDocument("users/1"); tsObs.on("data", c => series.push(c));
  await Promise.all([allObs, oneObs, prefObs, colObs, idxObs, opObs, cObs, likeObs, tsObs].map(o => o.ensureSubscribedNow()));

  let userCv;
  {
    const s = store.openSession();
    await s.store(new User("Ann"), "users/1");
    await s.store(new User("Bob"), "users/2");
    await s.store(new Order(10), "orders/1");
    await s.saveChanges();
    userCv = s.advanced.getChangeVectorFor(await s.load("users/1"));
  }
  await until(() => all.length >= 3 && orders.length >= 1 && prefixed.length >= 2, "document changes");
  assert.deepEqual(all.map(c => c.id).sort(), ["orders/1", "users/1", "users/2"]);
  const ann = one[0];
  assert.equal(ann.type, "Put");
  assert.equal(ann.id, "users/1");
  assert.equal(ann.collectionName, "Users");
  assert.equal(ann.changeVector, userCv);
  assert.equal(one.length, 1);
  assert.deepEqual(prefixed.map(c => c.id).sort(), ["users/1", "users/2"]);
  assert.deepEqual(orders.map(c => c.id), ["orders/1"]);

  {
    const s = store.openSession();
    s.countersFor("users/1").increment("Likes", 3);
    s.countersFor("users/1").increment("Views");
    await s.saveChanges();
    const s2 = store.openSession();
    s2.countersFor("users/1").increment("Likes", 2);
    await s2.saveChanges();
  }
  await until(() => counters.length >= 3 && likes.length >= 2, "counter changes");
  assert.deepEqual(likes.map(c => [c.type, c.value]), [["Put", 3], ["Increment", 5]]);
  assert.ok(counters.every(c => c.documentId === "users/1" && c.collectionName === "Users"));

  {
    const s = store.openSession();
    const ts = s.timeSeriesFor("users/1", "HeartRate");
    ts.append(new Date(Date.UTC(2026, 0, 1, 10)), 70);
    ts.append(new Date(Date.UTC(2026, 0, 1, 11)), 72);
    await s.saveChanges();
  }
  await until(() => series.length >= 1, "time-series change");
  assert.equal(series[0].name, "HeartRate");
  assert.equal(series[0].type, "Put");
  assert.equal(series[0].from.toISOString(), "2026-01-01T10:00:00.000Z");
  assert.equal(series[0].to.toISOString(), "2026-01-01T11:00:00.000Z");

  await store.maintenance.send(new PutIndexesOperation({ name: "Users/ByName", maps: new Set(["from u in docs.Users select new { u.name }"]) }));
  await until(() => indexEvents.some(e => e.type === "IndexAdded" && e.name === "Users/ByName") && indexEvents.some(e => e.type === "BatchCompleted"), "index changes");

  const op = await store.operations.send(new DeleteByQueryOperation("from Orders"));
  await op.waitForCompletion();
  await until(() => operations.some(o => o.operationId === op.id), "operation change");
  assert.equal(operations.find(o => o.operationId === op.id).state.status, "Completed");
  await until(() => orders.some(c => c.type === "Delete"), "the delete by query's document change");

  // Unsubscribed: no more events for users/1 alone.
  oneObs.off("data", onOne);
  const before = one.length;
  {
    const s = store.openSession();
    const u = await s.load("users/1");
    u.name = "Ann B";
    await s.saveChanges();
  }
  await until(() => all.filter(c => c.id === "users/1").length >= 3, "the second put of users/1");
  assert.equal(one.length, before);
  console.log(`changes: ok (${all.length} document, ${counters.length} counter, ${series.length} series, ${indexEvents.length} index, ${operations.length} operation events)`);
} finally {
  changes.dispose();
  store.dispose();
  clearTimeout(timeout);
}
