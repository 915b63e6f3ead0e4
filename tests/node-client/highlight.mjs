// Highlighting through RavenDB's official Node client (npm ravendb 7.2.6): highlight() with search() on a static
// index's Search field and on a dynamic query, default (colored) tags and custom pre/post tags, fragment count,
// and a field no search() matched. Usage: node highlight.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("highlight test timed out"); process.exit(3); }, 120_000);
class Article { constructor(title, body) { this.title = title; this.body = body; } }
const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const long = "The quick brown fox jumps over the lazy dog. " + "Filler words go on and on without the animal. ".repeat(6) + "At night the fox sleeps in its den.";
  {
    const s = store.openSession();
    await s.store(new Article("Fox facts", long), "articles/1");
    await s.store(new Article("Weather", "A quick note on rain and sun."), "articles/2");
    await s.store(new Article("Dogs", "Nothing to see."), "articles/3");
    await s.saveChanges();
  }
  await store.maintenance.send(new PutIndexesOperation({ name: "Articles/Search", maps: new Set(["from a in docs.Articles select new { a.title, a.body }"]),
    fields: { body: { indexing: "Search" }, title: { indexing: "Search" } } }));

  let bodies, titles;
  const results = await store.openSession().query({ indexName: "Articles/Search", documentType: Article }).waitForNonStaleResults()
    .highlight({ fieldName: "body", fragmentLength: 40, fragmentCount: 2 }, h => bodies = h)
    .highlight({ fieldName: "title", fragmentLength: 40, fragmentCount: 1 }, h => titles = h)
    .search("body", "fox quick")
    .all();
  assert.equal(results.length, 2);
  const fox = bodies.getFragments("articles/1");
  assert.equal(fox.length, 2, JSON.stringify(fox));
  assert.ok(fox.every(f => f.includes('<b style="background:') && f.includes("</b>")), JSON.stringify(fox));
  assert.ok(fox.join(" ").includes(">fox</b>"), JSON.stringify(fox));
  assert.ok(fox.every(f => f.replace(/<[^>]+>/g, "").length <= 60), JSON.stringify(fox));
  assert.deepEqual(bodies.getFragments("articles/2").map(f => f.replace(/<[^>]+>/g, "")), ["A quick note on rain and sun."]);
  assert.deepEqual(bodies.getFragments("articles/3"), []);
  assert.deepEqual(titles.getFragments("articles/1"), []); // no search() on title

  // Custom tags, on a dynamic query.
  let dyn;
  await store.openSession().query({ collection: "Articles", documentType: Article })
    .highlight({ fieldName: "body", fragmentLength: 100, fragmentCount: 1, preTags: ["[["], postTags: ["]]"] }, h => dyn = h)
    .search("body", "sleeps")
    .all();
  assert.deepEqual(dyn.getFragments("articles/1").map(f => f.match(/\[\[[^\]]+\]\]/g)), [["[[sleeps]]"]]);
  console.log("highlight: ok");
  clearTimeout(timeout);
  store.dispose();
  process.exit(0);
} catch (e) {
  console.error(`highlight failed: ${e.name}: ${e.message}\n${e.stack}`);
  process.exit(1);
}
