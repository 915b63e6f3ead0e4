// Query options and index administration through RavenDB's official Node client (npm ravendb 7.2.6): boost(), fuzzy(),
// proximity() (and RavenDB's errors for it), intersect(), whereLucene(), exact whereEquals, filter() with a limit, open
// whereBetween / whereGreaterThan bounds, an explained query, C# .Boost() in a map, getTerms, indexHasChanged,
// deleteIndexErrors, the indexing status, IndexChange notifications of set-lock / set-priority, and
// IndexDoesNotExistException for a query of a missing index; then an index over every document, a JavaScript index whose
// fields are built at run time, group by array(), a WKT circle, moreLikeThis with an artificial document, a facet query's
// includes and a declared time series answered as the result itself.
// Usage: node queryoptions.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation, IndexDefinition, GetTermsOperation, IndexHasChangedOperation,
  DeleteIndexErrorsOperation, GetIndexErrorsOperation, GetIndexingStatusOperation, StopIndexOperation, StartIndexOperation,
  SetIndexesLockOperation, SetIndexesPriorityOperation, ExplainQueryCommand, IndexQuery, AbstractCsharpIndexCreationTask,
  AbstractJavaScriptIndexCreationTask, GroupBy, PointField } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("queryoptions test timed out"); process.exit(3); }, 120_000);
class User { constructor(name, age, bio) { Object.assign(this, { name, age, bio }); } }

const store = new DocumentStore(url, database);
store.conventions.findCollectionNameForObjectLiteral = () => "Users";
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  {
    const s = store.openSession();
    await s.store(new User("John", 30, "the quick brown fox"), "users/1");
    await s.store(new User("Jane", 25, "quick red fox jumps"), "users/2");
    await s.store(new User("jOHN", 41, "a fox that is quick"), "users/3");
    await s.saveChanges();
  }
  const names = async (build) => (await build(store.openSession().query(User).waitForNonStaleResults()).all()).map(u => u.name);

  // boost(): the boosted condition's matches come first by score.
  assert.deepEqual((await names(q => q.whereEquals("name", "Jane").boost(5).orElse().whereGreaterThan("age", 26).orderByScore()))[0], "Jane");
  // fuzzy(), proximity(), intersect(), whereLucene(), exact.
  assert.deepEqual(await names(q => q.whereEquals("name", "Jhon").fuzzy(0.5)), ["John", "jOHN"]);
  assert.deepEqual(await names(q => q.search("bio", "quick fox").proximity(1)), ["John", "Jane"]);
  await assert.rejects(names(q => q.search("bio", "quick").proximity(1)),
    e => e.name === "InvalidQueryException" && e.message.includes("Proximity search works only on multiple search terms"));
  await assert.rejects(names(q => q.search("bio", "*uick fox").proximity(1)),
    e => e.name === "InvalidQueryException" && e.message.includes("not wildcard or prefix ones"));
  assert.deepEqual(await names(q => q.whereEquals("name", "john").intersect().whereEquals("age", 30)), ["John"]);
  assert.deepEqual(await names(q => q.whereLucene("name", "Ja*")), ["Jane"]);
  assert.deepEqual(await names(q => q.whereEquals("name", "jOHN", true)), ["jOHN"]);
  // filter(): checked on the documents the where clause matched, at most `limit` of them.
  assert.deepEqual(await names(q => q.whereGreaterThan("age", 20).filter(f => f.equals("name", "Jane"))), ["Jane"]);
  assert.deepEqual(await names(q => q.filter(f => f.greaterThan("age", 1), 2)), ["John", "Jane"]);
  // Open bounds: whereBetween(null, x) and whereGreaterThan(null) send '*', an open upper bound 'NULL'.
  assert.deepEqual(await names(q => q.whereBetween("age", null, 26)), ["Jane"]);
  assert.deepEqual(await names(q => q.whereBetween("age", 26, null)), ["John", "jOHN"]);
  assert.deepEqual(await names(q => q.whereLessThan("age", null)), ["John", "Jane", "jOHN"]);

  // An explained query names its index without creating it.
  const explain = new ExplainQueryCommand(store.conventions, new IndexQuery("from Users where nick = 'x'"));
  await store.getRequestExecutor().execute(explain);
  assert.equal(explain.result.length, 1);
  assert.ok(explain.result[0].index.startsWith("Auto/Users/By") && explain.result[0].index.includes("nick"), JSON.stringify(explain.result));
  assert.ok(explain.result[0].reason.includes("created"), JSON.stringify(explain.result));

  // A C# map with .Boost(): the boosted field's match scores ten times the other.
  const boosted = new IndexDefinition();
  boosted.name = "Users/Boosted";
  boosted.maps = new Set(["from u in docs.Users select new { Bio = u.bio.Boost(10), Name = u.name, Ratio = 100 / (int)u.age }"]);
  boosted.fields = { Bio: { indexing: "Search" }, Name: { indexing: "Search" } };
  boosted.configuration = { "Indexing.MapBatchSize": "64" };
  const plain = new IndexDefinition();
  plain.name = "Users/Plain";
  plain.maps = new Set(["from u in docs.Users select new { Bio = u.bio, Name = u.name }"]);
  plain.fields = { Bio: { indexing: "Search" }, Name: { indexing: "Search" } };
  await store.maintenance.send(new PutIndexesOperation(boosted, plain));
  const score = async (index) => {
    const s = store.openSession();
    const [jane] = await s.advanced.rawQuery(`from index '${index}' where search(Bio, 'red')`, User).waitForNonStaleResults().all();
    return s.advanced.getMetadataFor(jane)["@index-score"];
  };
  const [withBoost, without] = [await score("Users/Boosted"), await score("Users/Plain")];
  assert.ok(Math.abs(withBoost - 10 * without) < 1e-3, `${withBoost} vs ${without}`);
  assert.deepEqual((await store.maintenance.send(new GetTermsOperation("Users/Boosted", "Name", null, 10))), ["jane", "john"]);
  assert.deepEqual((await store.maintenance.send(new GetTermsOperation("Users/Boosted", "Name", "jane", 10))), ["john"]);
  assert.equal(await store.maintenance.send(new IndexHasChangedOperation(boosted)), false);
  boosted.configuration = { "Indexing.MapBatchSize": "128" };
  assert.equal(await store.maintenance.send(new IndexHasChangedOperation(boosted)), true);

  // An index error (the map divides by the age: 0 fails it), listed and then cleared.
  {
    const s = store.openSession();
    await s.store(new User("Zero", 0, "zero"), "users/4");
    await s.saveChanges();
  }
  await store.openSession().advanced.rawQuery("from index 'Users/Boosted'", User).waitForNonStaleResults().all();
  const errors = async () => (await store.maintenance.send(new GetIndexErrorsOperation(["Users/Boosted"])))[0].errors.length;
  assert.equal(await errors(), 1);
  await store.maintenance.send(new DeleteIndexErrorsOperation(["Users/Boosted"]));
  assert.equal(await errors(), 0);

  // Stopping one index leaves the database's indexing running.
  await store.maintenance.send(new StopIndexOperation("Users/Boosted"));
  const status = await store.maintenance.send(new GetIndexingStatusOperation());
  assert.equal(status.status, "Running");
  assert.equal(status.indexes.find(i => i.name === "Users/Boosted").status, "Paused");
  await store.maintenance.send(new StartIndexOperation("Users/Boosted"));

  // set-lock and set-priority publish IndexChange notifications.
  const changes = store.changes();
  await changes.ensureConnectedNow();
  const seen = [];
  const observable = changes.forIndex("Users/Boosted");
  observable.on("data", c => seen.push(c.type));
  await observable.ensureSubscribedNow();
  await store.maintenance.send(new SetIndexesLockOperation("Users/Boosted", "LockedIgnore"));
  await store.maintenance.send(new SetIndexesPriorityOperation("Users/Boosted", "High"));
  for (let i = 0; i < 100 && !(seen.includes("LockModeChanged") && seen.includes("PriorityChanged")); i++)
    await new Promise(r => setTimeout(r, 50));
  assert.ok(seen.includes("LockModeChanged") && seen.includes("PriorityChanged"), JSON.stringify(seen));
  changes.dispose();

  // A query of a missing index: IndexDoesNotExistException (RavenDB answers it with a 500, which the client raises).
  await assert.rejects(store.openSession().advanced.rawQuery("from index 'Nope'", User).all(), e => e.name === "IndexDoesNotExistException");
  // An index over every document, and a JavaScript map whose fields are what it returns.
  class AllDocs extends AbstractCsharpIndexCreationTask {
    constructor() { super(); this.map = "from doc in docs select new { Name = doc.name }"; }
  }
  class Built extends AbstractJavaScriptIndexCreationTask {
    constructor() {
      super();
      this.map("Users", u => { const r = {}; r.Name = u.name; r["Is" + u.name] = true; if (u.age > 40) return null; return r; });
    }
  }
  await new AllDocs().execute(store);
  await new Built().execute(store);
  {
    const s = store.openSession();
    await s.store({ name: "Acme", lat: 10, lng: 10, lines: [{ product: "p1" }, { product: "p2" }] }, "orders/1");
    await s.store({ name: "Beta", lat: 10.5, lng: 10.5, lines: [{ product: "p1" }, { product: "p2" }] }, "orders/2");
    await s.store({ name: "Gamma", lat: 20, lng: 20, lines: [{ product: "p1" }] }, "orders/3");
    await s.saveChanges();
  }
  const allNames = (await store.openSession().query({ indexName: "AllDocs" }).waitForNonStaleResults().whereEquals("Name", "Acme").all()).length;
  assert.equal(allNames, 1);
  const built = await store.openSession().query({ indexName: "Built" }).waitForNonStaleResults().whereEquals("IsJane", true).all();
  assert.deepEqual(built.map(u => u.name), ["Jane"]);
  assert.equal((await store.openSession().query({ indexName: "Built" }).waitForNonStaleResults().whereEquals("IsjOHN", true).all()).length, 0); // age 41: no entry

  // group by array(): the list of products is the key.
  const byList = await store.openSession().query({ collection: "Users" }).waitForNonStaleResults().all(); // warm-up of the collection
  assert.ok(byList.length > 0);
  const groups = await store.openSession().advanced.rawQuery("from Users group by array(lines[].product) select key() as products, count()").waitForNonStaleResults().all();
  const counts = Object.fromEntries(groups.map(g => [JSON.stringify(g.products), g.Count]));
  assert.equal(counts['["p1","p2"]'], 2, JSON.stringify(groups));
  assert.equal(counts['["p1"]'], 1, JSON.stringify(groups));

  // A WKT circle (kilometres) around a point; Beta is 78 km away.
  const near = await store.openSession().query({ collection: "Users" }).waitForNonStaleResults()
    .spatial(new PointField("lat", "lng"), f => f.relatesToShape("CIRCLE(10 10 d=100)", "Within")).all();
  assert.deepEqual(near.map(o => o.name).sort(), ["Acme", "Beta"]);

  // A declared time series, selected alone: the result is the aggregation itself.
  {
    const s = store.openSession();
    s.timeSeriesFor("orders/1", "Sales").append(new Date("2025-01-15T00:00:00Z"), 5);
    s.timeSeriesFor("orders/1", "Sales").append(new Date("2025-01-16T00:00:00Z"), 7);
    s.timeSeriesFor("orders/1", "Sales").append(new Date("2025-02-01T00:00:00Z"), 1);
    await s.saveChanges();
  }
  const [monthly] = await store.openSession().advanced.rawQuery(
    "declare timeseries sales(o) { from o.Sales group by '1 month' select sum() } from Users as o where id() = 'orders/1' select sales(o)").all();
  assert.equal(monthly.Count, 3, JSON.stringify(monthly));
  assert.deepEqual(monthly.Results.map(r => r.Sum[0]), [12, 1]);
  console.log("queryoptions: ok");
} finally {
  clearTimeout(timeout);
  store.dispose();
}
