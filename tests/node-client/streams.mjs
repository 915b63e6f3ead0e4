// Streaming through RavenDB's official Node client (npm ravendb 7.2.6): session.advanced.stream by id prefix
// (with startAfter, matches, exclude, start, pageSize), stream of a query (fluent and raw, with the stats
// callback, a projection, an ordered query, a map-reduce of a static index), streamInto a writable, an empty
// stream, and a stream of a missing index failing with the client's error. Usage: node streams.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, AbstractJavaScriptIndexCreationTask } from "ravendb";
import { Writable } from "node:stream";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("streams test timed out"); process.exit(3); }, 120_000);
class Order { constructor(company, freight, lines) { this.company = company; this.freight = freight; this.lines = lines; } }

async function collect(readable) {
  const items = [];
  await new Promise((resolve, reject) => {
    readable.on("data", d => items.push(d));
    readable.on("error", reject);
    readable.on("end", resolve);
  });
  return items;
}

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const count = 5000;
  {
    const bulk = store.bulkInsert();
    for (let i = 1; i <= count; i++)
      await bulk.store(new Order(`companies/${i % 7}`, i, [{ product: `products/${i % 3}`, qty: 1 }]), `orders/${i}`);
    await bulk.finish();
  }
  {
    const s = store.openSession();
    const all = await collect(await s.advanced.stream("orders/", { documentType: Order }));
    assert.equal(all.length, count, "every order streamed");
    assert.equal(all[0].document.company, "companies/1");
    assert.equal(all[0].id, "orders/1");
    assert.ok(all[0].changeVector, "change vector on each result");
    const ids = all.map(x => x.id);
    assert.deepEqual(ids, [...ids].sort(), "id order");
    const paged = await collect(await s.advanced.stream("orders/", { startAfter: "orders/4990", start: 2, pageSize: 3 }));
    assert.deepEqual(paged.map(x => x.id), ["orders/4993", "orders/4994", "orders/4995"]);
    const matched = await collect(await s.advanced.stream("orders/", { matches: "49*", exclude: "499*" }));
    assert.equal(matched.length, 1 + 10 + 100 - 11, "49, 49x, 49xx but not 499*");
    const none = await collect(await s.advanced.stream("nothing/"));
    assert.equal(none.length, 0);
  }
  {
    const s = store.openSession();
    let stats = null;
    const q = s.query({ collection: "orders", documentType: Order }).whereEquals("company", "companies/3");
    const results = await collect(await s.advanced.stream(q, st => { stats = st; }));
    assert.equal(results.length, [...Array(count).keys()].filter(i => (i + 1) % 7 === 3).length);
    assert.ok(results.every(r => r.document.company === "companies/3"));
    assert.ok(stats && stats.indexName.startsWith("Auto/orders/By"), JSON.stringify(stats));
    assert.equal(stats.totalResults, results.length);
    const raw = await collect(await s.advanced.stream(s.advanced.rawQuery("from orders where freight > $f order by freight as long desc select company, freight", Object).addParameter("f", count - 5)));
    assert.deepEqual(raw.map(r => r.document.freight), [5000, 4999, 4998, 4997, 4996]);
    assert.equal(raw[0].document.company, `companies/${5000 % 7}`);
    assert.equal(raw[0].document.lines, undefined, "projected");
    const limited = await collect(await s.advanced.stream(s.advanced.rawQuery("from orders limit 10, 5")));
    assert.equal(limited.length, 5);
  }
  {
    // streamInto: the raw results written to a writable as JSON lines.
    const s = store.openSession();
    let text = "";
    const sink = new Writable({ write(chunk, enc, cb) { text += chunk.toString(); cb(); } });
    // This client's streamInto promise never settles (its pipeline drops the callback): wait for the writable instead.
    const finished = new Promise((resolve, reject) => { sink.on("finish", resolve); sink.on("error", reject); });
    s.advanced.streamInto(s.query({ collection: "orders" }).whereEquals("company", "companies/1").take(4), sink).catch(() => {});
    await finished;
    assert.equal(text.split("\n").length, 4, text);
    assert.ok(text.includes("companies/1") && !text.includes("companies/2"), text.slice(0, 200));
  }
  {
    // A static map-reduce index streamed: the reduce results.
    class Totals extends AbstractJavaScriptIndexCreationTask {
      constructor() {
        super();
        this.map("orders", o => ({ company: o.company, count: 1 }));
        this.reduce(r => r.groupBy(x => x.company).aggregate(g => ({ company: g.key, count: g.values.reduce((a, v) => a + v.count, 0) })));
      }
    }
    await new Totals().execute(store);
    const s = store.openSession();
    await s.query({ indexName: "Totals" }).waitForNonStaleResults().all();
    const totals = await collect(await s.advanced.stream(s.advanced.rawQuery("from index 'Totals'")));
    assert.equal(totals.length, 7);
    assert.equal(totals.reduce((a, t) => a + t.document.count, 0), count);
  }
  {
    const s = store.openSession();
    await assert.rejects(async () => collect(await s.advanced.stream(s.advanced.rawQuery("from index 'NoSuchIndex'"))),
      e => e.name === "IndexDoesNotExistException" || /NoSuchIndex/.test(e.message));
  }
  console.log(`streams: ok (${count} by prefix, query, projection, order, map-reduce, streamInto)`);
} finally {
  store.dispose();
  clearTimeout(timeout);
}
