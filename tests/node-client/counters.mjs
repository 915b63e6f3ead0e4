// Counters and identities through RavenDB's official Node client (npm ravendb 7.2.6): session countersFor
// (increment, delete, get, getAll) saved with SaveChanges (the bulk_docs Counters command), @counters and
// @flags in the loaded metadata, include counters on load and in queries (with the session serving the
// included values without a request), counter()/counterRaw() in projections, CounterBatchOperation and GetCountersOperation, 64 concurrent
// increments losing nothing, counters in bulk insert, a counter on a missing document (DocumentDoesNotExistException), deleting the
// document deleting its counters; NextIdentityForOperation, SeedIdentityForOperation, GetIdentitiesOperation
// and `users|` ids from a session. Usage: node counters.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, CounterBatchOperation, CounterBatch, DocumentCountersOperation, CounterOperation,
  GetCountersOperation, NextIdentityForOperation, SeedIdentityForOperation, GetIdentitiesOperation,
} from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("counters test timed out"); process.exit(3); }, 120_000);
class User { constructor(name) { this.name = name; } }

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  {
    const s = store.openSession();
    await s.store(new User("Ann"), "users/1");
    await s.store(new User("Bob"), "users/2");
    await s.saveChanges();
  }
  {
    const s = store.openSession();
    const ann = await s.load("users/1");
    s.countersFor(ann).increment("Likes", 5);
    s.countersFor(ann).increment("Views");
    s.countersFor("users/2").increment("Likes", -3);
    await s.saveChanges();
    // The tracked entity's change vector follows (a second save of the entity is not a conflict).
    ann.name = "Ann B";
    await s.saveChanges();
  }
  {
    const s = store.openSession();
    const ann = await s.load("users/1");
    const meta = s.advanced.getMetadataFor(ann);
    assert.deepEqual([...meta["@counters"]].sort(), ["Likes", "Views"]);
    assert.match(meta["@flags"], /HasCounters/);
    assert.equal(ann.name, "Ann B");
    assert.equal(await s.countersFor(ann).get("likes"), 5); // names compare ignoring case
    assert.equal(await s.countersFor(ann).get("nope"), null);
    const all = await s.countersFor(ann).getAll();
    assert.deepEqual(all, { Likes: 5, Views: 1 });
    assert.equal(await s.countersFor("users/2").get("Likes"), -3);
  }
  {
    // include counters on load: the values come with the document, no further request
    const s = store.openSession();
    const ann = await s.load("users/1", { includes: i => i.includeCounter("Likes") });
    const before = s.advanced.numberOfRequests;
    assert.equal(await s.countersFor(ann).get("Likes"), 5);
    assert.equal(s.advanced.numberOfRequests, before);
    const s2 = store.openSession();
    await s2.load(["users/1", "users/2"], { includes: i => i.includeAllCounters() });
    const n = s2.advanced.numberOfRequests;
    assert.deepEqual(await s2.countersFor("users/2").getAll(), { Likes: -3 });
    assert.equal(s2.advanced.numberOfRequests, n);
  }
  {
    // include counters in a query
    const s = store.openSession();
    const users = await s.query({ collection: "Users" }).include(i => i.includeCounter("Likes")).whereEquals("name", "Ann B").all();
    assert.equal(users.length, 1);
    const n = s.advanced.numberOfRequests;
    assert.equal(await s.countersFor(users[0]).get("Likes"), 5);
    assert.equal(s.advanced.numberOfRequests, n);
  }
  {
    // counters in projections: counter()/counterRaw() in a select, counter(doc, name) in JavaScript
    const s = store.openSession();
    const rows = await s.advanced.rawQuery("from Users where name = 'Ann B' select counter('Likes') as likes, counterRaw('Likes') as raw, name").all();
    assert.equal(rows[0].likes, 5);
    assert.deepEqual(Object.values(rows[0].raw), [5]);
    assert.equal(rows[0].name, "Ann B");
    const scan = await s.advanced.rawQuery("from Users select counter('Likes') as likes").all();
    assert.deepEqual(scan.map(r => r.likes).sort(), [-3, 5]);
    const js = await s.advanced.rawQuery("from Users as u where u.name = 'Ann B' select { n: u.name, likes: counter(u, 'Likes'), none: counter(u, 'Nope') }").all();
    assert.deepEqual([js[0].n, js[0].likes, js[0].none], ["Ann B", 5, null]);
  }
  {
    // operations: a batch over two documents, then reads
    const batch = new CounterBatch();
    const d1 = new DocumentCountersOperation();
    d1.documentId = "users/1";
    d1.operations = [CounterOperation.create("Likes", "Increment", 10), CounterOperation.create("Views", "Delete")];
    const d2 = new DocumentCountersOperation();
    d2.documentId = "users/2";
    d2.operations = [CounterOperation.create("Shares", "Increment", 2)];
    batch.documents = [d1, d2];
    const result = await store.operations.send(new CounterBatchOperation(batch));
    assert.equal(result.counters.length, 2);
    assert.equal(result.counters[0].totalValue, 15);
    assert.equal(result.counters[1].counterName, "Shares");
    const got = await store.operations.send(new GetCountersOperation("users/1", ["Likes", "Views"]));
    assert.equal(got.counters[0].totalValue, 15);
    assert.equal(got.counters[1], null);
    const s = store.openSession();
    const ann = await s.load("users/1");
    assert.deepEqual([...s.advanced.getMetadataFor(ann)["@counters"]], ["Likes"]);
  }
  {
    // 64 concurrent increments of one counter: none is lost
    await Promise.all(Array.from({ length: 64 }, async () => {
      const s = store.openSession();
      s.countersFor("users/2").increment("Hits", 1);
      await s.saveChanges();
    }));
    assert.equal(await store.openSession().countersFor("users/2").get("Hits"), 64);
  }
  {
    // a counter on a missing document is refused and changes nothing
    const s = store.openSession();
    s.countersFor("users/404").increment("Likes");
    s.countersFor("users/1").increment("Likes", 100);
    await assert.rejects(s.saveChanges(), e => e.name === "DocumentDoesNotExistException");
    assert.equal(await store.openSession().countersFor("users/1").get("Likes"), 15);
  }
  {
    // deleting the document deletes its counters
    const s = store.openSession();
    s.delete("users/2");
    await s.saveChanges();
    const s2 = store.openSession();
    await s2.store(new User("Bob again"), "users/2");
    await s2.saveChanges();
    const s3 = store.openSession();
    assert.deepEqual(await s3.countersFor("users/2").getAll(), {});
    assert.equal(s3.advanced.getMetadataFor(await s3.load("users/2"))["@counters"], undefined);
  }
  {
    // counters in bulk insert, after their documents in the same stream
    const bulk = store.bulkInsert();
    for (let i = 0; i < 200; i++) {
      await bulk.store(new User("bulk " + i), "bulk/" + i);
      await bulk.countersFor("bulk/" + i).increment("Score", i);
      await bulk.countersFor("bulk/" + i).increment("Score", 1);
    }
    await bulk.finish();
    const s = store.openSession();
    assert.equal(await s.countersFor("bulk/150").get("Score"), 151);
    assert.deepEqual([...s.advanced.getMetadataFor(await s.load("bulk/7"))["@counters"]], ["Score"]);
  }
  {
    // identities
    assert.equal(await store.maintenance.send(new NextIdentityForOperation("people")), 1);
    assert.equal(await store.maintenance.send(new NextIdentityForOperation("people")), 2);
    assert.equal(await store.maintenance.send(new SeedIdentityForOperation("people", 100)), 100);
    assert.equal(await store.maintenance.send(new SeedIdentityForOperation("people", 50)), 100); // a seed never lowers
    assert.equal(await store.maintenance.send(new SeedIdentityForOperation("people", 50, true)), 50); // unless forced
    const s = store.openSession();
    await s.store(new User("Cy"), "people|");
    await s.saveChanges();
    assert.ok(await store.openSession().load("people/51"));
    const identities = await store.maintenance.send(new GetIdentitiesOperation());
    assert.equal(identities["people|"], 51);
  }
  console.log("counters: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
