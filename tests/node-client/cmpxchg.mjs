// Compare-exchange and cluster-wide transactions through RavenDB's official Node client (npm ravendb 7.2.6):
// PutCompareExchangeValueOperation with index semantics (0 = create only; a stale index fails and answers the
// current value), GetCompareExchangeValue(s)Operation by key and prefix, DeleteCompareExchangeValueOperation;
// a ClusterWide session creating a unique value and a document atomically, a second session claiming the same
// value failing with ClusterTransactionConcurrencyException and writing nothing, atomic guards making two
// sessions that loaded the same document race safely, and a session that did not load a guarded document
// failing to overwrite it; cmpxchg() in RQL where clauses, projections and JavaScript index maps; values included on load and in queries; a value with @expires deleted once it passes. Usage: node cmpxchg.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, PutCompareExchangeValueOperation, GetCompareExchangeValueOperation,
  GetCompareExchangeValuesOperation, DeleteCompareExchangeValueOperation, ConfigureExpirationOperation, PutIndexesOperation,
} from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("cmpxchg test timed out"); process.exit(3); }, 120_000);
class User { constructor(name, email) { this.name = name; this.email = email; } }

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  {
    const put = await store.operations.send(new PutCompareExchangeValueOperation("emails/ann@x.com", "users/1", 0));
    assert.equal(put.successful, true);
    assert.ok(put.index > 0);
    const again = await store.operations.send(new PutCompareExchangeValueOperation("emails/ann@x.com", "users/2", 0));
    assert.equal(again.successful, false);
    assert.equal(again.value, "users/1");
    assert.equal(again.index, put.index);
    const update = await store.operations.send(new PutCompareExchangeValueOperation("emails/ann@x.com", "users/3", put.index));
    assert.equal(update.successful, true);
    assert.ok(update.index > put.index);
    const got = await store.operations.send(new GetCompareExchangeValueOperation("emails/ann@x.com"));
    assert.equal(got.value, "users/3");
    assert.equal(got.index, update.index);
    assert.equal(await store.operations.send(new GetCompareExchangeValueOperation("emails/none")) ?? null, null); // 404: no result
    await store.operations.send(new PutCompareExchangeValueOperation("emails/bob@x.com", { owner: "users/9", since: 2020 }, 0));
    const byPrefix = await store.operations.send(new GetCompareExchangeValuesOperation({ startWith: "emails/" }));
    assert.deepEqual(Object.keys(byPrefix).sort(), ["emails/ann@x.com", "emails/bob@x.com"]);
    assert.equal(byPrefix["emails/bob@x.com"].value.owner, "users/9");
    const stale = await store.operations.send(new DeleteCompareExchangeValueOperation("emails/bob@x.com", 1));
    assert.equal(stale.successful, false);
    const del = await store.operations.send(new DeleteCompareExchangeValueOperation("emails/bob@x.com", byPrefix["emails/bob@x.com"].index));
    assert.equal(del.successful, true);
    assert.equal(await store.operations.send(new GetCompareExchangeValueOperation("emails/bob@x.com")) ?? null, null);
  }
  {
    // a unique value and its document, atomically
    const s = store.openSession({ transactionMode: "ClusterWide" });
    const user = new User("Cy", "cy@x.com");
    await s.store(user, "users/cy");
    s.advanced.clusterTransaction.createCompareExchangeValue("emails/cy@x.com", "users/cy");
    await s.saveChanges();
    const s2 = store.openSession({ transactionMode: "ClusterWide" });
    await s2.store(new User("Other Cy", "cy@x.com"), "users/cy2");
    s2.advanced.clusterTransaction.createCompareExchangeValue("emails/cy@x.com", "users/cy2");
    await assert.rejects(s2.saveChanges(), e => e.name === "ClusterTransactionConcurrencyException");
    assert.equal(await store.openSession().load("users/cy2"), null); // nothing of the failed transaction was written
    const s3 = store.openSession({ transactionMode: "ClusterWide" });
    const v = await s3.advanced.clusterTransaction.getCompareExchangeValue("emails/cy@x.com");
    assert.equal(v.value, "users/cy");
    // update and delete through the session
    v.value = "users/cy-renamed";
    await s3.saveChanges();
    const s4 = store.openSession({ transactionMode: "ClusterWide" });
    const v4 = await s4.advanced.clusterTransaction.getCompareExchangeValue("emails/cy@x.com");
    assert.equal(v4.value, "users/cy-renamed");
    s4.advanced.clusterTransaction.deleteCompareExchangeValue(v4);
    await s4.saveChanges();
    assert.equal(await store.operations.send(new GetCompareExchangeValueOperation("emails/cy@x.com")) ?? null, null);
  }
  {
    // atomic guards: two sessions load the same document; the second to save loses
    const a = store.openSession({ transactionMode: "ClusterWide" });
    const b = store.openSession({ transactionMode: "ClusterWide" });
    const ua = await a.load("users/cy");
    const ub = await b.load("users/cy");
    ua.name = "by a";
    ub.name = "by b";
    await a.saveChanges();
    await assert.rejects(b.saveChanges(), e => e.name === "ClusterTransactionConcurrencyException");
    assert.equal((await store.openSession().load("users/cy")).name, "by a");
    // a session that never loaded it cannot overwrite it as new
    const c = store.openSession({ transactionMode: "ClusterWide" });
    await c.store(new User("blind", "x"), "users/cy");
    await assert.rejects(c.saveChanges(), e => e.name === "ClusterTransactionConcurrencyException");
    // a fresh load and save works; a cluster-wide delete removes the guard and the document
    const d = store.openSession({ transactionMode: "ClusterWide" });
    const ud = await d.load("users/cy");
    ud.name = "by d";
    await d.saveChanges();
    const e = store.openSession({ transactionMode: "ClusterWide" });
    e.delete(await e.load("users/cy"));
    await e.saveChanges();
    assert.equal(await store.openSession().load("users/cy"), null);
    const guards = await store.operations.send(new GetCompareExchangeValuesOperation({ startWith: "rvn-atomic/" }));
    assert.equal(Object.keys(guards).length, 0);
  }
  {
    // compare-exchange values in RQL: in where (collection and index queries) and in a JavaScript projection
    const s = store.openSession();
    await s.store(new User("Dee", "dee@x.com"), "users/dee");
    await s.store(new User("Eve", "eve@x.com"), "users/eve");
    await s.saveChanges();
    await store.operations.send(new PutCompareExchangeValueOperation("admins/current", "Eve", 0));
    await store.operations.send(new PutCompareExchangeValueOperation("emails/dee@x.com", { verified: true }, 0));
    const q = store.openSession();
    const admins = await q.advanced.rawQuery("from Users where name = cmpxchg('admins/current')").waitForNonStaleResults().all();
    assert.deepEqual(admins.map(u => u.name), ["Eve"]);
    const viaIndex = await q.advanced.rawQuery("from Users where name = cmpxchg($k)").addParameter("k", "admins/current").all();
    assert.deepEqual(viaIndex.map(u => u.name), ["Eve"]);
    const projected = await q.advanced.rawQuery("from Users as u where u.name in ('Dee', 'Eve') order by u.name select { name: u.name, email: cmpxchg('emails/' + u.email) }").all();
    assert.deepEqual(projected.map(p => [p.name, p.email?.verified ?? null]), [["Dee", true], ["Eve", null]]);
  }
  {
    // compare-exchange values included on load (the include names the document's path holding the key), served by the
    // cluster session without a request
    const w = store.openSession();
    await w.store({ name: "Dee's key", emailKey: "emails/dee@x.com", "@metadata": { "@collection": "Keys" } }, "keys/dee");
    await w.saveChanges();
    const s = store.openSession({ transactionMode: "ClusterWide" });
    await s.load("keys/dee", { includes: i => i.includeCompareExchangeValue("emailKey") });
    const n = s.advanced.numberOfRequests;
    const v = await s.advanced.clusterTransaction.getCompareExchangeValue("emails/dee@x.com");
    assert.equal(v.value.verified, true);
    assert.equal(s.advanced.numberOfRequests, n);
  }
  {
    // include cmpxchg(path) in a query: the values named by a field come with the results
    const w = store.openSession();
    await w.store({ name: "Fay", emailKey: "emails/dee@x.com", "@metadata": { "@collection": "Users" } }, "users/fay");
    await w.saveChanges();
    const s = store.openSession({ transactionMode: "ClusterWide" });
    const found = await s.query({ collection: "Users" }).whereEquals("name", "Fay").include(i => i.includeCompareExchangeValue("emailKey")).waitForNonStaleResults().all();
    assert.equal(found.length, 1);
    const n = s.advanced.numberOfRequests;
    const v = await s.advanced.clusterTransaction.getCompareExchangeValue("emails/dee@x.com");
    assert.equal(v.value.verified, true);
    assert.equal(s.advanced.numberOfRequests, n);
  }
  {
    // a value with @expires in its metadata is deleted once the time passes
    await store.maintenance.send(new ConfigureExpirationOperation({ disabled: false, deleteFrequencyInSec: 1 }));
    await store.operations.send(new PutCompareExchangeValueOperation("locks/ttl", "held", 0, { "@expires": new Date(Date.now() - 1000).toISOString() }));
    let v = "present";
    for (let i = 0; i < 100 && v !== null; i++) {
      v = (await store.operations.send(new GetCompareExchangeValueOperation("locks/ttl"))) ?? null;
      if (v !== null) await new Promise(r => setTimeout(r, 100));
    }
    assert.equal(v, null);
  }
  {
    // cmpxchg() in a JavaScript index map: the value is indexed, and a change of it re-indexes the documents that read it
    await store.operations.send(new PutCompareExchangeValueOperation("tiers/Fay", { tier: "gold" }, 0));
    await store.maintenance.send(new PutIndexesOperation({ name: "Users/ByTier",
      maps: new Set(["map('Users', u => ({ name: u.name, tier: (cmpxchg('tiers/' + u.name) || {}).tier || null }))"]) }));
    const tierOf = async (tier) => (await store.openSession().query({ indexName: "Users/ByTier" }).waitForNonStaleResults().whereEquals("tier", tier).all()).map(u => u.name);
    assert.deepEqual(await tierOf("gold"), ["Fay"]);
    const current = await store.operations.send(new GetCompareExchangeValueOperation("tiers/Fay"));
    await store.operations.send(new PutCompareExchangeValueOperation("tiers/Fay", { tier: "silver" }, current.index));
    assert.deepEqual(await tierOf("silver"), ["Fay"]);
    assert.deepEqual(await tierOf("gold"), []);
  }
  console.log("cmpxchg: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
