// MoreLikeThis through RavenDB's official Node client (npm ravendb 7.2.6): moreLikeThis() by a document of the
// index and by an artificial document (JSON), with options (fields, term/document frequencies, stop words),
// most similar first, the source itself never answered. Usage: node mlt.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("mlt test timed out"); process.exit(3); }, 120_000);
class Post { constructor(body, topic) { this.body = body; this.topic = topic; } }
const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const posts = [
    ["lucene search engine indexing text search", "tech"],       // 0
    ["search engine ranking of text documents", "tech"],         // 1
    ["cooking pasta with tomato sauce", "food"],                 // 2
    ["tomato sauce recipes and pasta cooking at home", "food"],  // 3
    ["database engine storage and indexing", "tech"],            // 4
    ["fast search engine for text search", "tech"],              // 5
    ["gardening in spring", "home"],                             // 6
  ];
  {
    const s = store.openSession();
    for (let i = 0; i < posts.length; i++) await s.store(new Post(...posts[i]), `posts/${i}`);
    await s.store({ stopWords: ["engine", "and"] }, "config/stopwords");
    await s.saveChanges();
  }
  await store.maintenance.send(new PutIndexesOperation({ name: "Posts/Similar", maps: new Set(["from p in docs.Posts select new { p.body, p.topic }"]),
    fields: { body: { indexing: "Search" } } }));
  const q = () => store.openSession().query({ indexName: "Posts/Similar", documentType: Post }).waitForNonStaleResults();
  const ids = (session, docs) => docs.map(d => session.advanced.getDocumentId(d));
  const loose = { minimumTermFrequency: 1, minimumDocumentFrequency: 1, fields: ["body"] };

  let session = store.openSession();
  let found = await session.query({ indexName: "Posts/Similar", documentType: Post }).waitForNonStaleResults()
    .moreLikeThis(b => b.usingDocument(x => x.whereEquals("id()", "posts/0")).withOptions(loose)).all();
  // Shares "search", "engine", "text": 5 (search twice) and 1 first; 4 shares "engine", "indexing"; never 0 itself or the food posts.
  const first = ids(session, found);
  assert.ok(!first.includes("posts/0"), first.join());
  assert.deepEqual([...first].sort(), ["posts/1", "posts/4", "posts/5"]);
  assert.equal(first[0], "posts/5");

  session = store.openSession();
  found = await session.query({ indexName: "Posts/Similar", documentType: Post }).waitForNonStaleResults()
    .moreLikeThis(b => b.usingDocument(x => x.whereEquals("id()", "posts/2")).withOptions(loose)).all();
  assert.deepEqual(ids(session, found), ["posts/3"]);

  // RavenDB's defaults (a term twice in the source, in at least 5 documents) find nothing in so few posts.
  assert.deepEqual(await q().moreLikeThis(b => b.usingDocument(x => x.whereEquals("id()", "posts/2"))).all(), []);

  // An artificial document, on the whole-value field.
  session = store.openSession();
  found = await session.query({ indexName: "Posts/Similar", documentType: Post }).waitForNonStaleResults()
    .moreLikeThis(b => b.usingDocument(JSON.stringify({ topic: "food" })).withOptions({ minimumTermFrequency: 1, minimumDocumentFrequency: 1, fields: ["topic"] })).all();
  assert.deepEqual(ids(session, found).sort(), ["posts/2", "posts/3"]);

  // Stop words: without "engine" and "and", posts/4 shares only "indexing" (with posts/0).
  session = store.openSession();
  found = await session.query({ indexName: "Posts/Similar", documentType: Post }).waitForNonStaleResults()
    .moreLikeThis(b => b.usingDocument(x => x.whereEquals("id()", "posts/4")).withOptions({ ...loose, stopWordsDocumentId: "config/stopwords" })).all();
  assert.deepEqual(ids(session, found), ["posts/0"]);

  await assert.rejects(q().moreLikeThis(b => b.usingDocument(x => x.whereEquals("id()", "posts/0")).withOptions({ fields: ["nope"] })).all(),
    (e) => e.name === "InvalidQueryException" && /nope/.test(e.message));
  console.log("mlt: ok");
  clearTimeout(timeout);
  store.dispose();
  process.exit(0);
} catch (e) {
  console.error(`mlt failed: ${e.name}: ${e.message}\n${e.stack}`);
  process.exit(1);
}
