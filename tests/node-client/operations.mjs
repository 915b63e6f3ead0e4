// Patches through RavenDB's official Node client (npm ravendb 7.2.6): session.advanced.patch/increment, addOrPatch,
// addOrIncrement and
// PatchOperation on single documents, and operations by query: PatchByQueryOperation (RQL
// `update { ... }` with query parameters, waitForCompletion), DeleteByQueryOperation, a script that does not parse
// (JavaScriptParseException) and one that fails for a document (the operation faults, waitForCompletion throws).
// Every figure is checked against the stored documents. Usage: node operations.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PatchByQueryOperation, DeleteByQueryOperation, IndexQuery, PatchOperation, PatchRequest } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("operations test timed out"); process.exit(3); }, 120_000);
class Order { constructor(freight, company) { Object.assign(this, { freight, company }); } }

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const session = store.openSession();
  for (let i = 1; i <= 300; i++) await session.store(new Order(i % 40, `companies/${i % 5}`), `orders/${i}`);
  await session.saveChanges();

  const patch = new IndexQuery();
  patch.query = "from Orders where freight >= $min update { this.freight = this.freight + $add; this.patched = true; }";
  patch.queryParameters = { min: 20, add: 1000 };
  const op = await store.operations.send(new PatchByQueryOperation(patch));
  await op.waitForCompletion();
  const check = store.openSession();
  const all = await check.query({ collection: "Orders" }).waitForNonStaleResults().all();
  assert.equal(all.length, 300);
  for (const o of all) {
    const n = Number(check.advanced.getDocumentId(o).split("/")[1]);
    if (n % 40 >= 20) { assert.equal(o.freight, n % 40 + 1000); assert.equal(o.patched, true); }
    else { assert.equal(o.freight, n % 40); assert.equal(o.patched, undefined); }
  }

  const del = await store.operations.send(new DeleteByQueryOperation("from Orders where company = 'companies/3'"));
  await del.waitForCompletion();
  const left = await store.openSession().query({ collection: "Orders" }).waitForNonStaleResults().count();
  assert.equal(left, 300 - 60);

  await assert.rejects(store.operations.send(new PatchByQueryOperation("from Orders update { this.freight = ; }")), (e) => e.name === "JavaScriptParseException" || /parse/i.test(e.message));
  const failing = await store.operations.send(new PatchByQueryOperation("from Orders update { if (this.freight === 1) throw new Error('freight one'); }"));
  await assert.rejects(failing.waitForCompletion(), /freight one/);
  // Single-document patches: the session's patch/increment (PATCH commands in bulk_docs) and PatchOperation.
  const s2 = store.openSession();
  const first = await s2.load("orders/1");
  s2.advanced.patch(first, "freight", 7);
  s2.advanced.increment("orders/2", "freight", 100);
  await s2.saveChanges();
  assert.equal(first.freight, 7); // the session took the patched document back
  const s3 = store.openSession();
  assert.equal((await s3.load("orders/1")).freight, 7);
  assert.equal((await s3.load("orders/2")).freight, 2 + 100);
  const result = await store.operations.send(new PatchOperation("orders/4", null, PatchRequest.forScript("this.freight = this.freight * 10;")));
  assert.equal(result.status, "Patched");
  assert.equal(result.document.freight, 40);
  assert.equal((await store.openSession().load("orders/4")).freight, 40);
  const missing = await store.operations.send(new PatchOperation("orders/none", null, PatchRequest.forScript("this.freight = 1;")));
  assert.equal(missing.status, "DocumentDoesNotExist");
  {
    // session.advanced.addOrPatch / addOrIncrement: PATCH with CreateIfMissing in the batch
    class Counter { constructor(name, n) { this.name = name; this.n = n; } }
    let s = store.openSession();
    s.advanced.addOrPatch("counters/1", new Counter("new", 1), "n", 5);
    await s.saveChanges();
    assert.equal((await store.openSession().load("counters/1")).n, 1); // created from the entity
    s = store.openSession();
    s.advanced.addOrPatch("counters/1", new Counter("new", 1), "n", 5);
    await s.saveChanges();
    assert.equal((await store.openSession().load("counters/1")).n, 5); // patched
    s = store.openSession();
    s.advanced.addOrIncrement("counters/1", new Counter("x", 0), "n", 3);
    await s.saveChanges();
    assert.equal((await store.openSession().load("counters/1")).n, 8);
  }
  console.log("operations: ok");
} finally {
  store.dispose();
  clearTimeout(timeout);
}
