// search() on Lucene through RavenDB's official Node client (npm ravendb 7.2.6): Lucene syntax in
// search(), the and/or operator argument, orderByScore() and @index-score in the metadata, on a static
// index and on a dynamic query. Usage: node search.mjs <url> <database>. Exits 0 when every step holds.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("search test timed out"); process.exit(3); }, 120_000);
class Note { constructor(text, n) { this.text = text; this.n = n; } }
const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const texts = ["the quick brown fox", "a quick fox", "brown bears are not quick", "quick brown dogs", "nothing here"];
  {
    const s = store.openSession();
    for (let i = 0; i < texts.length; i++) await s.store(new Note(texts[i], i), `notes/${i}`);
    await s.saveChanges();
  }
  await store.maintenance.send(new PutIndexesOperation({ name: "Notes/ByText", maps: new Set(["from n in docs.Notes select new { n.text, n.n }"]), fields: { text: { indexing: "Search" } } }));
  const q = () => store.openSession().query({ indexName: "Notes/ByText", documentType: Note }).waitForNonStaleResults();
  const ns = (docs) => docs.map((d) => d.n).sort((a, b) => a - b);
  assert.deepEqual(ns(await q().search("text", '"quick brown"').all()), [0, 3]);
  assert.deepEqual(ns(await q().search("text", "quick brown", "AND").all()), [0, 2, 3]);
  assert.deepEqual(ns(await q().search("text", "quick brown").all()), [0, 1, 2, 3]);
  assert.deepEqual(ns(await q().search("text", "br*n").all()), [0, 2, 3]);
  assert.deepEqual(ns(await q().search("text", "quick -brown").all()), [1]);
  const session = store.openSession();
  const ranked = await session.query({ indexName: "Notes/ByText", documentType: Note }).waitForNonStaleResults().search("text", "fox^5 quick").orderByScore().all();
  assert.deepEqual(ns(ranked.slice(0, 2)), [0, 1]);
  const scores = ranked.map((d) => session.advanced.getMetadataFor(d)["@index-score"]);
  assert.ok(scores.every((x) => typeof x === "number" && x > 0), JSON.stringify(scores));
  assert.ok(scores.every((x, i) => i === 0 || scores[i - 1] >= x), "ordered by score: " + JSON.stringify(scores));
  const dynamic = await store.openSession().query({ collection: "Notes", documentType: Note }).search("text", '"brown fox" OR "brown dogs"').all();
  assert.deepEqual(ns(dynamic), [0, 3]);
  await assert.rejects(q().search("text", '"unclosed').all(), (e) => e.name === "InvalidQueryException");
  // A field analyzer named in the definition (English stemming).
  await store.maintenance.send(new PutIndexesOperation({ name: "Notes/English", maps: new Set(["from n in docs.Notes select new { n.text, n.n }"]), fields: { text: { indexing: "Search", analyzer: "EnglishAnalyzer" } } }));
  const english = await store.openSession().query({ indexName: "Notes/English", documentType: Note }).waitForNonStaleResults().search("text", "dog bear").all();
  assert.deepEqual(ns(english), [2, 3]);
  await assert.rejects(store.maintenance.send(new PutIndexesOperation({ name: "Notes/Bad", maps: new Set(["from n in docs.Notes select new { n.text }"]), fields: { text: { analyzer: "NoSuchAnalyzer" } } })),
    (e) => e.name === "IndexCompilationException");
  // include timings() and explanations(): Lucene's account of each answer's score.
  let timings, explanations;
  const explained = store.openSession();
  const withWhy = await explained.query({ indexName: "Notes/ByText", documentType: Note }).waitForNonStaleResults()
    .timings(t => timings = t).includeExplanations(e => explanations = e).search("text", "fox").all();
  assert.equal(withWhy.length, 2);
  assert.ok(timings.durationInMs >= 0 && timings.timings.query.durationInMs >= 0 && timings.timings.query.timings.lucene.durationInMs >= 0, JSON.stringify(timings));
  for (const doc of withWhy) {
    const why = explanations.explanations[explained.advanced.getDocumentId(doc)];
    assert.ok(why.length === 1 && /weight\(s\d+:fox/.test(why[0]) && /idf/.test(why[0]), JSON.stringify(why));
  }
  console.log("search: ok");
  clearTimeout(timeout);
  store.dispose();
  process.exit(0);
} catch (e) {
  console.error(`search failed: ${e.name}: ${e.message}\n${e.stack}`);
  process.exit(1);
}
