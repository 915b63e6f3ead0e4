// Lazy operations through RavenDB's official Node client (npm ravendb 7.2.6): lazily load (one, many, with include),
// loadStartingWith, conditionalLoad, query lazily and countLazily, a lazy facet aggregation and a lazy suggestion, all
// sent in one POST /multi_get by executeAllPendingLazyOperations (one request counted); the second run served from the
// client's cache through the 304s the server answers inside multi_get; an error inside multi_get reaching the caller.
// Usage: node lazy.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation, RangeBuilder } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("lazy test timed out"); process.exit(3); }, 120_000);
class Product { constructor(name, price, supplier) { this.name = name; this.price = price; this.supplier = supplier; } }
class Supplier { constructor(name) { this.name = name; } }

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  let supplierCv;
  {
    const s = store.openSession();
    await s.store(new Supplier("Acme"), "suppliers/1");
    const names = ["chair", "chairs", "table", "lamp", "desk"];
    for (let i = 0; i < names.length; i++)
      await s.store(new Product(names[i], (i + 1) * 10, "suppliers/1"), `products/${i + 1}`);
    await s.saveChanges();
    supplierCv = s.advanced.getChangeVectorFor(await s.load("suppliers/1"));
  }
  await store.maintenance.send(new PutIndexesOperation({ name: "Products/ByName", maps: new Set(["from p in docs.Products select new { p.name, p.price }"]), fields: { name: { indexing: "Search", suggestions: true } } }));
  {
    const s = store.openSession();
    await s.query({ indexName: "Products/ByName" }).waitForNonStaleResults().all();
  }
  async function runAll() {
    const s = store.openSession();
    const one = s.advanced.lazily.load("products/1");
    const many = s.advanced.lazily.load(["products/2", "products/3", "products/404"]);
    const withInclude = s.advanced.lazily.include("supplier").load("products/4");
    const prefix = s.advanced.lazily.loadStartingWith("products/");
    const conditional = s.advanced.lazily.conditionalLoad("suppliers/1", "A:1-notthecurrentone", Supplier);
    const cheap = s.query({ collection: "Products" }).whereLessThan("price", 35).lazily();
    const count = s.query({ collection: "Products" }).whereGreaterThan("price", 15).countLazily();
    const price = RangeBuilder.forPath("price");
    const facets = s.query({ indexName: "Products/ByName" }).aggregateBy(b => b.byRanges(price.isLessThan(25), price.isGreaterThanOrEqualTo(25))).executeLazy();
    const suggestion = s.query({ indexName: "Products/ByName" }).suggestUsing(b => b.byField("name", "chiar")).executeLazy();
    await s.advanced.eagerly.executeAllPendingLazyOperations();
    assert.equal(s.advanced.numberOfRequests, 1, "one multi_get");
    assert.equal((await one.getValue()).name, "chair");
    const m = await many.getValue();
    assert.equal(m["products/2"].name, "chairs");
    assert.equal(m["products/404"], null);
    assert.equal((await withInclude.getValue()).name, "lamp");
    assert.equal((await s.load("suppliers/1")).name, "Acme");
    assert.equal(Object.keys(await prefix.getValue()).length, 5);
    const c = await conditional.getValue();
    assert.equal(c.entity.name, "Acme");
    assert.equal(c.changeVector, supplierCv);
    assert.deepEqual((await cheap.getValue()).map(p => p.name).sort(), ["chair", "chairs", "table"]);
    assert.equal(await count.getValue(), 4);
    const f = await facets.getValue();
    assert.deepEqual(f.price.values.map(v => v.count), [2, 3]);
    assert.deepEqual((await suggestion.getValue()).name.suggestions, ["chair"]); // "chairs" shares no n-gram of its size with "chiar": no SpellChecker candidate
    assert.equal(s.advanced.numberOfRequests, 1, "the include was served from the multi_get answer");
  }
  await runAll();
  await runAll(); // the cached answers are revalidated (304 inside multi_get) and still right
  {
    const s = store.openSession();
    const bad = s.advanced.rawQuery("from Products where").lazily();
    await assert.rejects(async () => { await s.advanced.eagerly.executeAllPendingLazyOperations(); await bad.getValue(); },
      e => /Invalid query|InvalidQuery|400/.test(e.message), "an inner error reaches the caller");
  }
  console.log("lazy: ok");
} finally {
  store.dispose();
  clearTimeout(timeout);
}
