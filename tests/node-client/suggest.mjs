// Suggestions through RavenDB's official Node client (npm ravendb 7.2.6): suggestUsing() on a Search field of a
// static index and on a dynamic query, several words, display names, options (page size, distance, accuracy,
// sort mode), and the 400 for unknown options. Usage: node suggest.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("suggest test timed out"); process.exit(3); }, 120_000);
class Product { constructor(name) { this.name = name; } }
const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  // "chair" in three products, "chain" in one, "chairs" in one: popularity puts "chair" first.
  const names = ["oak chair", "pine chair", "chair cushion", "steel chain", "garden chairs", "table lamp", "desk lamp", "floor lamp"];
  {
    const s = store.openSession();
    for (let i = 0; i < names.length; i++) await s.store(new Product(names[i]), `products/${i}`);
    await s.saveChanges();
  }
  await store.maintenance.send(new PutIndexesOperation({ name: "Products/ByName", maps: new Set(["from p in docs.Products select new { p.name }"]), fields: { name: { indexing: "Search" } } }));
  const q = () => store.openSession().query({ indexName: "Products/ByName", documentType: Product }).waitForNonStaleResults();

  const r1 = await q().suggestUsing(b => b.byField("name", "chiar")).execute();
  assert.deepEqual(r1.name.suggestions.slice(0, 1), ["chair"]);
  // As Lucene's SpellChecker: "chairs" (3 edits, 0.5) shares no n-gram of its size with "chiar", so it is no candidate;
  // "chain" is a candidate but 3 edits away (0.4 < 0.5).
  assert.deepEqual(r1.name.suggestions, ["chair"]);
  assert.ok(!r1.name.suggestions.includes("lamp"), JSON.stringify(r1));

  // The word itself is never suggested; page size; several words; a display name.
  const r2 = await q().suggestUsing(b => b.byField("name", ["chair", "lmap"]).withDisplayName("Words").withOptions({ pageSize: 2, distance: "Levenshtein", accuracy: 0.4, sortMode: "Popularity" })).execute();
  assert.equal(r2.Words.suggestions.length, 2);
  assert.ok(!r2.Words.suggestions.includes("chair"), JSON.stringify(r2));
  assert.ok(r2.Words.suggestions.includes("lamp"), JSON.stringify(r2));

  // JaroWinkler and NGram, and an accuracy nothing reaches.
  const r3 = await q().suggestUsing(b => b.byField("name", "tabel").withOptions({ distance: "JaroWinkler", accuracy: 0.8, pageSize: 10, sortMode: "None" })).execute();
  assert.deepEqual(r3.name.suggestions, ["table"]);
  const r4 = await q().suggestUsing(b => b.byField("name", "cushon").withOptions({ distance: "NGram", accuracy: 0.6, pageSize: 10, sortMode: "None" })).execute();
  assert.deepEqual(r4.name.suggestions, ["cushion"]);
  const r5 = await q().suggestUsing(b => b.byField("name", "zzzz").withOptions({ accuracy: 0.9, pageSize: 10, distance: "Levenshtein", sortMode: "None" })).execute();
  assert.deepEqual(r5.name.suggestions, []);

  // A dynamic query: whole values of the field, from the auto index.
  const r6 = await store.openSession().query({ collection: "Products", documentType: Product }).suggestUsing(b => b.byField("name", "oak chiar")).execute();
  assert.deepEqual(r6.name.suggestions.slice(0, 1), ["oak chair"]);

  await assert.rejects(q().suggestUsing(b => b.byField("name", "x").withOptions({ distance: "Soundex", pageSize: 1, accuracy: 0.5, sortMode: "None" })).execute(),
    (e) => e.name === "InvalidQueryException" && /Soundex/.test(e.message));
  console.log("suggest: ok");
  clearTimeout(timeout);
  store.dispose();
  process.exit(0);
} catch (e) {
  console.error(`suggest failed: ${e.name}: ${e.message}\n${e.stack}`);
  process.exit(1);
}
