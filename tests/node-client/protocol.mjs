// Protocol fidelity (issue 20): the places where RavenLite used to answer RavenDB's official Node client
// (npm ravendb 7.2.6) differently from RavenDB. Each step uses the real client; raw fetch is used only to
// look at the wire (status codes, headers) or to send what the client cannot.
// Usage: node protocol.mjs <url> <database-prefix>. Exits 0 when every step holds; prints each step.
import {
  DocumentStore, CreateDatabaseOperation, DeleteDatabasesOperation, GetDatabaseRecordOperation, GetCollectionStatisticsOperation,
  HiloIdGenerator, MultiDatabaseHiLoIdGenerator, PutCommandDataWithJson, GetOperationStateOperation, PutIndexesOperation,
} from "ravendb";
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import net from "node:net";

const [url, prefix] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("protocol test timed out"); process.exit(3); }, 240_000);
const step = (name) => console.log(`step: ${name}`);
// PROTOCOL_STEPS=ids,hilo,... runs only those steps (for checking one fix at a time); default: all.
const only = process.env.PROTOCOL_STEPS ? new Set(process.env.PROTOCOL_STEPS.split(",")) : null;
const want = (key) => only === null || only.has(key);
// Steps run only when named (the test restarts the server between them).
const wantExplicitly = (key) => only !== null && only.has(key);
const stores = [];

function open(database, { topology = true, fetchLog = null } = {}) {
  const store = new DocumentStore(url, database);
  store.conventions.disableTopologyUpdates = !topology;
  if (fetchLog) {
    // Records every request the client sends and the status it got (to see 304s on the wire).
    store.conventions.customFetch = async (uri, { dispatcher, ...options }) => {
      void dispatcher; // the client's undici agent does not fit Node's built-in fetch
      const response = await fetch(uri, options);
      fetchLog.push({ method: options.method ?? "GET", uri: String(uri), status: response.status, ifNoneMatch: options.headers?.["If-None-Match"] ?? null });
      return response;
    };
  }
  store.initialize();
  stores.push(store);
  return store;
}

async function createDatabase(name) {
  const admin = open(name);
  await admin.maintenance.server.send(new CreateDatabaseOperation({ databaseName: name }));
  return admin;
}

class User { constructor(name, age) { this.name = name; this.age = age; } }
class Product { constructor(name) { this.name = name; } }
class HiloDoc { constructor(max) { this.Max = max; } }

try {
  // ---------------------------------------------------------------------------------------------
  if (want("ids")) {
    step("PUT with an empty id: the server generates a GUID; '/' a server id; '|' an identity");
    const store = await createDatabase(prefix + "_ids");
    const session = store.openSession();
    session.advanced.defer(
      new PutCommandDataWithJson("", null, null, { name: "guid", "@metadata": { "@collection": "Things" } }),
      new PutCommandDataWithJson("things/", null, null, { name: "server", "@metadata": { "@collection": "Things" } }),
      new PutCommandDataWithJson("things|", null, null, { name: "identity1", "@metadata": { "@collection": "Things" } }),
      new PutCommandDataWithJson("things|", null, null, { name: "identity2", "@metadata": { "@collection": "Things" } }));
    await session.saveChanges();
    const stored = await store.openSession().query({ collection: "Things" }).all();
    const ids = (await store.openSession().advanced.loadStartingWith("things")).map((d) => d.name);
    assert.deepEqual(ids.sort(), ["identity1", "identity2", "server"]);
    const guidDoc = stored.find((d) => d.name === "guid");
    assert.ok(guidDoc, "the GUID document is stored");
    const all = await store.openSession().advanced.rawQuery("from Things", Object).all();
    assert.equal(all.length, 4);
    const idsOnWire = await (await fetch(`${url}/databases/${prefix}_ids/collections/docs?name=Things&pageSize=10`)).json();
    const wireIds = idsOnWire.Results.map((d) => d["@metadata"]["@id"]);
    assert.ok(wireIds.some((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)), `a GUID id among ${wireIds}`);
    assert.ok(wireIds.some((id) => /^things\/\d{19}-A$/.test(id)), `a server id among ${wireIds}`);
    assert.ok(wireIds.includes("things/1") && wireIds.includes("things/2"), `identities among ${wireIds}`);
    // The raw single-document PUT with ?id= (empty) answers 201 with the generated id.
    const put = await fetch(`${url}/databases/${prefix}_ids/docs?id=`, { method: "PUT", body: JSON.stringify({ name: "raw", "@metadata": { "@collection": "Things" } }) });
    assert.equal(put.status, 201);
    const putBody = await put.json();
    assert.match(putBody.Id, /^[0-9a-f-]{36}$/);
    assert.equal((await store.openSession().load(putBody.Id)).name, "raw");
    // A bare separator names no prefix: a clear 400, nothing written.
    const bad = await fetch(`${url}/databases/${prefix}_ids/docs?id=%2F`, { method: "PUT", body: "{}" });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).Type, "Raven.Client.Exceptions.BadRequestException");
  }

  // ---------------------------------------------------------------------------------------------
  if (want("hilo")) {
    step("HiLo: every flow of the client (RavenDB's own HiLo tests)");
    const db = prefix + "_hilo";
    const store = await createDatabase(db);
    // cannot go down: the client stores its own HiLo document, then lowers Max over the generator's update.
    {
      const session = store.openSession();
      const hiloDoc = new HiloDoc(32);
      await session.store(hiloDoc, "Raven/Hilo/users");
      await session.saveChanges();
      const generator = new HiloIdGenerator("users", store, db, "/");
      const ids = [(await generator.getNextId()).id];
      hiloDoc.Max = 12;
      await session.store(hiloDoc, "Raven/Hilo/users", { changeVector: null });
      await session.saveChanges(); // was: 400 "Changing ... via update is not supported"
      for (let i = 0; i < 128; i++) {
        const next = (await generator.getNextId()).id;
        assert.ok(!ids.includes(next), `id ${next} handed out twice`);
        ids.push(next);
      }
      await generator.returnUnusedRange();
    }
    // capacity doubles, and the HiLo document keeps the client's type in its metadata.
    {
      const session = store.openSession();
      await session.store(new HiloDoc(64), "Raven/Hilo/products");
      await session.saveChanges();
      const generator = new HiloIdGenerator("products", store, db, "/");
      for (let i = 0; i < 32; i++) await generator.generateDocumentId(new Product());
      const first = await store.openSession().load("Raven/Hilo/products", HiloDoc);
      assert.equal(first.Max, 96);
      assert.equal(first.constructor, HiloDoc);
      await generator.generateDocumentId(new Product());
      const second = await store.openSession().load("Raven/Hilo/products", HiloDoc);
      assert.equal(second.Max, 160);
      assert.equal(second.constructor, HiloDoc);
    }
    // several collections through the multi-database generator, from client-made HiLo documents.
    {
      const session = store.openSession();
      await session.store(new HiloDoc(64), "Raven/Hilo/orders");
      await session.store(new HiloDoc(128), "Raven/Hilo/companies");
      await session.saveChanges();
      const multi = new MultiDatabaseHiLoIdGenerator(store);
      assert.equal(await multi.generateDocumentId(null, Object.assign(new (class Order {})(), {})), "orders/65-A");
      assert.equal(await multi.generateDocumentId(null, Object.assign(new (class Company {})(), {})), "companies/129-A");
    }
    // returns the unused range on dispose; a new store picks up where the last one left off.
    {
      const first = open(db);
      const session = first.openSession();
      await session.store(new HiloDoc(32), "Raven/Hilo/people");
      await session.saveChanges();
      await session.store(Object.assign(new (class Person {})(), { n: 1 }));
      await session.store(Object.assign(new (class Person {})(), { n: 2 }));
      await session.saveChanges();
      await new Promise((resolve) => { first.once("afterDispose", (done) => { done(); resolve(); }); first.dispose(); });
      const again = open(db);
      const doc = await again.openSession().load("Raven/Hilo/people", HiloDoc);
      assert.equal(doc.Max, 34);
      assert.equal(doc.constructor, HiloDoc);
      const s = again.openSession();
      const p = Object.assign(new (class Person {})(), { n: 3 });
      await s.store(p);
      await s.saveChanges();
      assert.equal(s.advanced.getDocumentId(p), "people/35-A");
    }
    // parallel sessions of one store get one range, no gaps; concurrent stores never share an id.
    {
      const users = Array.from({ length: 40 }, (_, i) => new User("p" + i, i));
      const db2 = prefix + "_hilo2";
      const s2 = await createDatabase(db2);
      await Promise.all(users.map(async (u) => { const s = s2.openSession(); await s.store(u); await s.saveChanges(); }));
      const numbers = users.map((u) => parseInt(u.id.split("/")[1], 10)).sort((a, b) => a - b);
      assert.deepEqual(numbers, Array.from({ length: 40 }, (_, i) => i + 1));
      const generators = Array.from({ length: 4 }, () => open(db2));
      const seen = new Set();
      await Promise.all(generators.map(async (g) => {
        for (let i = 0; i < 300; i++) {
          const id = await g.hiLoIdGenerator.generateNextIdFor(db2, "Users");
          assert.ok(!seen.has(id), `id ${id} handed out twice across stores`);
          seen.add(id);
        }
      }));
      assert.equal(seen.size, 1200);
    }
  }

  // ---------------------------------------------------------------------------------------------
  if (want("caching")) {
    step("HTTP caching: 304 for docs, queries and loadStartingWith; conditionalLoad; aggressive caching; noCaching");
    const db = prefix + "_cache";
    await createDatabase(db);
    const log = [];
    const store = open(db, { fetchLog: log });
    {
      const s = store.openSession();
      for (let i = 1; i <= 5; i++) await s.store(new User("u" + i, 20 + i), `users/${i}`);
      await s.saveChanges();
    }
    const statusesOf = (pred) => log.filter(pred).map((e) => e.status);
    // load: the second load of the same document asks with If-None-Match and gets 304.
    assert.equal((await store.openSession().load("users/1", User)).name, "u1");
    assert.equal((await store.openSession().load("users/1", User)).name, "u1");
    const loads = log.filter((e) => e.uri.includes("/docs?") && e.uri.includes("id=users%2F1"));
    assert.deepEqual(loads.map((e) => e.status), [200, 304]);
    assert.ok(loads[1].ifNoneMatch, "the second load sent If-None-Match");
    // a change makes the next load a 200 with the new content.
    { const s = store.openSession(); (await s.load("users/1", User)).age = 99; await s.saveChanges(); }
    assert.equal((await store.openSession().load("users/1", User)).age, 99);
    // multi-load
    log.length = 0;
    await store.openSession().load(["users/2", "users/3"], User);
    await store.openSession().load(["users/2", "users/3"], User);
    assert.deepEqual(statusesOf((e) => e.uri.includes("id=users%2F2")), [200, 304]);
    // queries
    log.length = 0;
    const q = () => store.openSession().query({ collection: "Users", documentType: User }).whereGreaterThan("age", 21).orderBy("age", "Long").all();
    const r1 = await q();
    const r2 = await q();
    assert.deepEqual(r2.map((u) => u.name), r1.map((u) => u.name));
    assert.deepEqual(statusesOf((e) => e.uri.includes("/queries")), [200, 304]);
    { const s = store.openSession(); await s.store(new User("u6", 60), "users/6"); await s.saveChanges(); }
    const r3 = await store.openSession().query({ collection: "Users", documentType: User }).waitForNonStaleResults().whereGreaterThan("age", 21).orderBy("age", "Long").all();
    assert.equal(r3.length, r1.length + 1, "a write changes the answer");
    log.length = 0;
    const r4 = await q(); // the same query as r1/r2: its cached answer is out of date now
    assert.equal(r4.length, r1.length + 1, "a write changes the query's ETag");
    assert.deepEqual(statusesOf((e) => e.uri.includes("/queries")), [200]);
    // noCaching: the query sends no If-None-Match
    log.length = 0;
    await store.openSession().query({ collection: "Users", documentType: User }).whereGreaterThan("age", 21).orderBy("age", "Long").noCaching().all();
    assert.deepEqual(log.filter((e) => e.uri.includes("/queries")).map((e) => [e.status, e.ifNoneMatch]), [[200, null]]);
    // a session opened with noCaching never revalidates
    log.length = 0;
    await store.openSession({ noCaching: true }).load("users/2", User);
    assert.deepEqual(log.filter((e) => e.uri.includes("/docs?")).map((e) => [e.status, e.ifNoneMatch]), [[200, null]]);
    // loadStartingWith
    log.length = 0;
    await store.openSession().advanced.loadStartingWith("users/", { documentType: User });
    await store.openSession().advanced.loadStartingWith("users/", { documentType: User });
    assert.deepEqual(statusesOf((e) => e.uri.includes("startsWith=")), [200, 304]);
    // conditionalLoad: "not modified" while the change vector is current, the entity once it changed.
    const cv = await (async () => { const s = store.openSession(); const u = await s.load("users/3", User); return s.advanced.getChangeVectorFor(u); })();
    const same = await store.openSession().advanced.conditionalLoad("users/3", cv, User);
    assert.equal(same.entity, null);
    assert.equal(same.changeVector, cv);
    { const s = store.openSession(); (await s.load("users/3", User)).age = 33; await s.saveChanges(); }
    const changed = await store.openSession().advanced.conditionalLoad("users/3", cv, User);
    assert.equal(changed.entity.age, 33);
    assert.notEqual(changed.changeVector.replaceAll('"', ""), cv);
    const missing = await store.openSession().advanced.conditionalLoad("users/404", cv, User);
    assert.equal(missing.entity, null);
    assert.equal(missing.changeVector, null);
    // aggressive caching: while the cached answer is young the client does not ask at all.
    await store.openSession().load("users/4", User);
    store.getRequestExecutor().aggressiveCaching = { duration: 60_000 };
    log.length = 0;
    assert.equal((await store.openSession().load("users/4", User)).name, "u4");
    assert.equal(log.filter((e) => e.uri.includes("/docs?")).length, 0, "served from the aggressive cache");
    store.getRequestExecutor().aggressiveCaching = null;
    // on the wire: a stale If-None-Match gets the new answer, a current one gets 304 with an empty body.
    const first = await fetch(`${url}/databases/${db}/docs?id=users/5`);
    const etag = first.headers.get("etag");
    assert.ok(etag && etag.startsWith('"A:'), `ETag ${etag}`);
    const notModified = await fetch(`${url}/databases/${db}/docs?id=users/5`, { headers: { "If-None-Match": etag } });
    assert.equal(notModified.status, 304);
    assert.equal((await notModified.text()).length, 0);
    const stale = await fetch(`${url}/databases/${db}/docs?id=users/5`, { headers: { "If-None-Match": '"A:1-stale"' } });
    assert.equal(stale.status, 200);
  }

  // ---------------------------------------------------------------------------------------------
  if (want("lsw")) {
    step("loadStartingWith: id order, start, pageSize, matches, exclude, startAfter; into a stream");
    const db = prefix + "_lsw";
    const store = await createDatabase(db);
    const names = ["emp/10", "emp/2", "emp/1", "emp/11", "Emp/3", "emp/a1", "emp/b22", "empire/1", "other/1"];
    { const s = store.openSession(); for (const n of names) await s.store({ id: n, name: n }, n); await s.saveChanges(); }
    const idsOf = (docs) => docs.map((d) => d.name);
    const lsw = (opts = {}) => store.openSession().advanced.loadStartingWith("emp/", opts).then(idsOf);
    assert.deepEqual(await lsw(), ["emp/1", "emp/10", "emp/11", "emp/2", "Emp/3", "emp/a1", "emp/b22"]);
    assert.deepEqual(await lsw({ start: 2, pageSize: 3 }), ["emp/11", "emp/2", "Emp/3"]);
    assert.deepEqual(await lsw({ matches: "1*" }), ["emp/1", "emp/10", "emp/11"]);
    assert.deepEqual(await lsw({ matches: "1?|a*" }), ["emp/10", "emp/11", "emp/a1"]);
    assert.deepEqual(await lsw({ matches: "?" }), ["emp/1", "emp/2", "Emp/3"]);
    assert.deepEqual(await lsw({ matches: "A1" }), ["emp/a1"], "matches ignores case");
    assert.deepEqual(await lsw({ exclude: "1*|b*" }), ["emp/2", "Emp/3", "emp/a1"]);
    assert.deepEqual(await lsw({ matches: "*1*", exclude: "11" }), ["emp/1", "emp/10", "emp/a1"]);
    assert.deepEqual(await lsw({ startAfter: "emp/11" }), ["emp/2", "Emp/3", "emp/a1", "emp/b22"]);
    assert.deepEqual(await lsw({ startAfter: "emp/11", pageSize: 2, start: 1 }), ["Emp/3", "emp/a1"]);
    assert.deepEqual(await store.openSession().advanced.loadStartingWith("EMP/1").then(idsOf), ["emp/1", "emp/10", "emp/11"], "the prefix ignores case");
    assert.deepEqual(await store.openSession().advanced.loadStartingWith("nothing/").then(idsOf), []);
    // into a stream: exactly the matching documents
    let text = "";
    const sink = new Writable({ write(chunk, _e, cb) { text += chunk; cb(); } });
    await store.openSession().advanced.loadStartingWithIntoStream("emp/", sink, { matches: "1*" });
    const streamed = JSON.parse(text);
    assert.deepEqual(streamed.results.map((d) => d.name), ["emp/1", "emp/10", "emp/11"]);
    // loadIntoStream by ids: exactly those, in request order, null for a missing one
    text = "";
    const sink2 = new Writable({ write(chunk, _e, cb) { text += chunk; cb(); } });
    await store.openSession().advanced.loadIntoStream(["emp/2", "missing/1", "Emp/3"], sink2);
    assert.deepEqual(JSON.parse(text).results.map((d) => d && d.name), ["emp/2", null, "Emp/3"]);
  }

  // ---------------------------------------------------------------------------------------------
  if (want("bulk")) {
    step("bulk insert: skipOverwriteIfUnchanged; a refused insert answers JSON after reading the stream");
    const db = prefix + "_bulk";
    const store = await createDatabase(db);
    {
      const bulk = store.bulkInsert();
      for (let i = 0; i < 300; i++) await bulk.store(new User("b" + i, i % 50), `bulk/${i}`);
      await bulk.finish();
    }
    const before = await (async () => { const s = store.openSession(); const docs = await s.load(Array.from({ length: 300 }, (_, i) => `bulk/${i}`), User); return Object.fromEntries(Object.entries(docs).map(([id, d]) => [id, s.advanced.getChangeVectorFor(d)])); })();
    {
      const bulk = store.bulkInsert({ skipOverwriteIfUnchanged: true });
      for (let i = 0; i < 300; i++) await bulk.store(new User("b" + i, i < 10 ? 1000 + i : i % 50), `bulk/${i}`);
      await bulk.finish();
      const state = await store.maintenance.send(new GetOperationStateOperation(bulk._operationId));
      assert.equal(state.status, "Completed");
      assert.equal(state.result.documentsProcessed ?? state.result.DocumentsProcessed, 300);
      assert.equal(state.result.documentsSkipped ?? state.result.DocumentsSkipped, 290);
    }
    {
      const s = store.openSession();
      const docs = await s.load(Array.from({ length: 300 }, (_, i) => `bulk/${i}`), User);
      for (let i = 0; i < 300; i++) {
        const cv = s.advanced.getChangeVectorFor(docs[`bulk/${i}`]);
        if (i < 10) {
          assert.notEqual(cv, before[`bulk/${i}`], `bulk/${i} changed and was written`);
          assert.equal(docs[`bulk/${i}`].age, 1000 + i);
        } else {
          assert.equal(cv, before[`bulk/${i}`], `bulk/${i} was unchanged and not rewritten`);
        }
      }
    }
    // A bad item in the middle of a long stream: the client gets the server's reason, not EPIPE.
    {
      const bulk = store.bulkInsert();
      let error = null;
      try {
        for (let i = 0; i < 2000; i++) await bulk.store(new User("x" + i, i), i === 1000 ? "bad/" + "x".repeat(600) : `bad/${i}`);
        await bulk.finish();
      } catch (e) {
        error = e;
      }
      assert.ok(error, "the insert failed");
      assert.equal(error.name, "BulkInsertAbortedException", `${error.name}: ${error.message}`);
      assert.match(error.message, /UTF-8 bytes long; the limit is 512/);
      assert.doesNotMatch(error.message, /EPIPE|socket|ECONNRESET/i);
    }
    // Raw: a long stream that never ends (as the Node client sends it) to a missing database gets the JSON
    // 503 + Database-Missing. (undici itself tolerates an early answer; the server reads to the closing bracket
    // first anyway, as for every refused bulk insert.)
    {
      const enc = new TextEncoder();
      let i = 0;
      const total = 150_000;
      const body = new ReadableStream({
        pull(controller) {
          if (i === 0) controller.enqueue(enc.encode("["));
          if (i >= total) {
            controller.enqueue(enc.encode("]"));
            // Like the Node client: the body is never ended; the answer must come after the closing bracket.
            return new Promise(() => {});
          }
          let chunk = "";
          for (let k = 0; k < 500 && i < total; k++, i++)
            chunk += (i ? "," : "") + JSON.stringify({ Id: `x/${i}`, Type: "PUT", Document: { n: i, pad: "p".repeat(100), "@metadata": { "@collection": "X" } } });
          controller.enqueue(enc.encode(chunk));
        },
      });
      const response = await fetch(`${url}/databases/${prefix}_nosuchdb/bulk_insert?id=1`, { method: "POST", body, duplex: "half" });
      assert.equal(response.status, 503);
      assert.equal(response.headers.get("database-missing"), `${prefix}_nosuchdb`);
      assert.equal((await response.json()).Type, "Raven.Client.Exceptions.Database.DatabaseDoesNotExistException");
    }
    // A client that goes away mid-stream: the operation is Faulted as the client's doing (not a server error 500).
    {
      const id = 777;
      const dbName = db;
      await new Promise((resolve, reject) => {
        const socket = net.connect({ host: new URL(url).hostname, port: Number(new URL(url).port) }, () => {
          socket.write(`POST /databases/${dbName}/bulk_insert?id=${id} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
          const chunk = '[{"Id":"gone/1","Type":"PUT","Document":{"a":1,"@metadata":{"@collection":"Gone"}}},{"Id":"gone/2","Type":"PUT","Doc';
          socket.write(chunk.length.toString(16) + "\r\n" + chunk + "\r\n");
          setTimeout(() => { socket.destroy(); resolve(); }, 300);
        });
        socket.on("error", reject);
      });
      let state;
      for (let i = 0; i < 50; i++) {
        state = await (await fetch(`${url}/databases/${dbName}/operations/state?id=${id}`)).json();
        if (state.Status !== "InProgress") break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(state.Status, "Faulted");
      assert.ok(state.Result.StatusCode < 500, `status ${state.Result.StatusCode}: ${state.Result.Message}`);
      assert.match(state.Result.Message, /closed the stream/);
    }
  }

  // ---------------------------------------------------------------------------------------------
  if (want("metadata")) {
    step("metadata: no @collection on a document without one; collection stats count it under @empty");
    const db = prefix + "_meta";
    const store = await createDatabase(db);
    store.conventions.findCollectionNameForObjectLiteral = () => null;
    const s = store.openSession();
    await s.store({ plain: true }, "plain/1");
    await s.saveChanges();
    const s2 = store.openSession();
    const doc = await s2.load("plain/1");
    const meta = s2.advanced.getMetadataFor(doc);
    assert.equal(meta["@collection"], undefined, JSON.stringify(meta));
    assert.equal(meta["@id"], "plain/1");
    const wire = await (await fetch(`${url}/databases/${db}/docs?id=plain/1`)).json();
    assert.ok(!("@collection" in wire.Results[0]["@metadata"]), JSON.stringify(wire.Results[0]["@metadata"]));
    const stats = await store.maintenance.send(new GetCollectionStatisticsOperation());
    assert.equal(stats.collections["@empty"], 1);
    const queried = await store.openSession().advanced.rawQuery("from @all_docs where plain = true").all();
    assert.equal(queried.length, 1);
  }

  // ---------------------------------------------------------------------------------------------
  if (want("errors")) {
    step("exception types: the names RavenDB sends, raised as the client's own exceptions");
    const db = prefix + "_errors";
    const store = await createDatabase(db);
    await assert.rejects(store.openSession().advanced.rawQuery("from Users where age >").all(), (e) => e.name === "InvalidQueryException" && /position/.test(e.message));
    await assert.rejects(store.openSession().advanced.rawQuery("from Users where age = $missing").all(), (e) => e.name === "InvalidQueryException");
    await assert.rejects(store.openSession().query({ indexName: "No/Such/Index" }).all(), (e) => e.name === "IndexDoesNotExistException");
    await assert.rejects(store.maintenance.send(new PutIndexesOperation({ name: "Bad", maps: new Set(["this is not an index"]) })), (e) => e.name === "IndexCompilationException");
    const s1 = store.openSession();
    s1.advanced.useOptimisticConcurrency = true;
    await s1.store(new User("a", 1), "users/x");
    await s1.saveChanges();
    const s2 = store.openSession();
    s2.advanced.useOptimisticConcurrency = true;
    await s2.store(new User("b", 2), "users/x");
    await assert.rejects(s2.saveChanges(), (e) => e.name === "ConcurrencyException");
    const badJson = await fetch(`${url}/databases/${db}/bulk_docs`, { method: "POST", body: "{nope" });
    assert.equal(badJson.status, 400);
    assert.equal((await badJson.json()).Type, "Raven.Client.Exceptions.BadRequestException");
    const moved = store.openSession();
    await moved.store(new Product("p"), "users/x");
    await assert.rejects(moved.saveChanges(), (e) => e.name === "DocumentCollectionMismatchException" || /via update is not supported/.test(e.message));
  }

  // ---------------------------------------------------------------------------------------------
  if (want("topology")) {
    step("topology and database record: a missing database is DatabaseDoesNotExistException; the record has every field");
    for (const topology of [true, false]) {
      const missing = open(prefix + "_missing", { topology });
      const t0 = Date.now();
      await assert.rejects(missing.openSession().load("users/1"), (e) => e.name === "DatabaseDoesNotExistException");
      assert.ok(Date.now() - t0 < 10_000, "no failover wait");
    }
    const topo = await fetch(`${url}/topology?name=${prefix}_missing`);
    assert.equal(topo.headers.get("database-missing"), `${prefix}_missing`);
    const db = prefix + "_record";
    const store = await createDatabase(db);
    await store.maintenance.send(new PutIndexesOperation({ name: "Users/ByName", maps: new Set(["from u in docs.Users select new { u.name }"]) }));
    const record = await store.maintenance.server.send(new GetDatabaseRecordOperation(db));
    assert.equal(record.databaseName, db);
    assert.equal(record.databaseState, "Normal");
    assert.equal(record.lockMode, "Unlock");
    assert.equal(record.disabled, false);
    assert.deepEqual(record.topology.members, ["A"]);
    assert.equal(record.topology.replicationFactor, 1);
    assert.ok("Users/ByName" in record.indexes, Object.keys(record.indexes).join(","));
    assert.deepEqual(record.settings, {});
    assert.deepEqual(record.periodicBackups, []);
    assert.equal(await store.maintenance.server.send(new GetDatabaseRecordOperation(prefix + "_missing")) ?? null, null);
  }

  // ---------------------------------------------------------------------------------------------
  if (want("sample")) {
    step("sample data: POST /databases/{db}/studio/sample-data fills an empty database with related documents");
    const db = prefix + "_sample";
    const store = await createDatabase(db);
    const created = await fetch(`${url}/databases/${db}/studio/sample-data`, { method: "POST" });
    assert.equal(created.status, 204);
    const stats = await store.maintenance.send(new GetCollectionStatisticsOperation());
    for (const c of ["Orders", "Companies", "Products", "Employees", "Categories", "Suppliers", "Shippers"])
      assert.ok(stats.collections[c] > 0, `collection ${c}: ${JSON.stringify(stats.collections)}`);
    assert.equal(stats.collections["Orders"], 830);
    const session = store.openSession();
    const orders = await session.query({ collection: "Orders" }).include("Company").include("Employee").whereGreaterThan("Freight", 150).all();
    assert.ok(orders.length > 0);
    for (const o of orders) {
      assert.ok(await session.load(o.Company), `company ${o.Company}`);
      assert.ok(await session.load(o.Employee), `employee ${o.Employee}`);
    }
    assert.equal(session.advanced.numberOfRequests, 1, "companies and employees came as includes");
    const products = await session.load(orders.flatMap((o) => o.Lines.map((l) => l.Product)));
    assert.ok(Object.values(products).every((p) => p && p.Name), "every order line names an existing product");
    // new orders continue the sample's HiLo sequence
    const s = store.openSession();
    const order = Object.assign(new (class Order {})(), { Freight: 1 });
    await s.store(order);
    await s.saveChanges();
    assert.match(s.advanced.getDocumentId(order), /^orders\/(8[3-9]\d|9\d\d|\d{4,})-A$/);
    const again = await fetch(`${url}/databases/${db}/studio/sample-data`, { method: "POST" });
    assert.equal(again.status, 400);
    assert.match((await again.json()).Message, /already contains documents/);
  }

  // ---------------------------------------------------------------------------------------------
  // HiLo across a server restart: restart1 takes ranges from two stores and leaves them unreturned (as a
  // killed client would); after the server restarts, restart2's stores must not hand out any of those ids.
  if (wantExplicitly("restart1")) {
    step("HiLo before a server restart");
    const db = prefix + "_restart";
    const a = await createDatabase(db);
    const b = open(db);
    await Promise.all([a, b].map(async (store, k) => {
      for (let i = 0; i < 50; i++) { const s = store.openSession(); await s.store(new User(`before${k}-${i}`, i)); await s.saveChanges(); }
    }));
    console.log("restart1: stored 100");
    process.exit(0); // no dispose: the ranges are not returned
  }
  if (wantExplicitly("restart2")) {
    step("HiLo after a server restart");
    const db = prefix + "_restart";
    const stores2 = [open(db), open(db)];
    const ids = new Set();
    await Promise.all(stores2.map(async (store, k) => {
      for (let i = 0; i < 50; i++) { const s = store.openSession(); const u = new User(`after${k}-${i}`, i); await s.store(u); await s.saveChanges(); ids.add(u.id); }
    }));
    assert.equal(ids.size, 100);
    const all = await stores2[0].openSession().query({ collection: "Users", documentType: User }).waitForNonStaleResults().all();
    assert.equal(all.length, 200, "no id of the first run was handed out again");
    assert.equal(all.filter((u) => u.name.startsWith("before")).length, 100);
  }

  for (const s of stores) s.dispose();
  console.log("protocol: ok");
  clearTimeout(timeout);
  process.exit(0);
} catch (e) {
  console.error(`protocol failed: ${e.name}: ${e.message}\n${e.stack}`);
  process.exit(1);
}
