// Counters and time-series indexes through RavenDB's official Node client (npm ravendb 7.2.x): the C# index tasks
// (AbstractCsharpTimeSeriesIndexCreationTask, AbstractCsharpCountersIndexCreationTask, a multi-map over two series),
// the raw JavaScript ones (AbstractRawJavaScriptCountersIndexCreationTask, ..TimeSeries..), queried with a session
// (results are the index entries), streamed, and GetTermsOperation; changes after the index exists are followed.
// Usage: node itemindexes.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, AbstractCsharpTimeSeriesIndexCreationTask, AbstractCsharpCountersIndexCreationTask,
  AbstractMultiMapTimeSeriesIndexCreationTask, AbstractRawJavaScriptCountersIndexCreationTask, AbstractRawJavaScriptTimeSeriesIndexCreationTask,
  GetTermsOperation, GetIndexOperation,
} from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("itemindexes test timed out"); process.exit(3); }, 120_000);
class Company { constructor(name) { this.name = name; } }
class HeartRateEntry { }
class LikesEntry { }
const base = new Date(Date.UTC(2026, 0, 1, 0, 0, 0));
const minutes = (n) => new Date(base.getTime() + n * 60_000);

class HeartRates extends AbstractCsharpTimeSeriesIndexCreationTask {
  constructor() {
    super();
    this.map = "from ts in timeSeries.Companies.HeartRate from entry in ts.Entries select new { heartBeat = entry.Values[0], timestamp = entry.Timestamp, user = ts.DocumentId }";
  }
}
class AllSeries extends AbstractMultiMapTimeSeriesIndexCreationTask {
  constructor() {
    super();
    this._addMap("from ts in timeSeries.Companies.HeartRate from entry in ts.Entries select new { value = entry.Value, name = ts.Name }");
    this._addMap("from ts in timeSeries.Companies.Steps from entry in ts.Entries select new { value = entry.Value, name = ts.Name }");
  }
}
class Likes extends AbstractCsharpCountersIndexCreationTask {
  constructor() {
    super();
    this.map = "from counter in counters.Companies.Likes select new { likes = counter.Value, name = counter.Name, user = counter.DocumentId }";
  }
}
class JsCounters extends AbstractRawJavaScriptCountersIndexCreationTask {
  constructor() {
    super();
    this.maps.add("counters.map('Companies', function (counter) { return { name: counter.Name, value: counter.Value, doc: counter.DocumentId }; })");
  }
}
class JsSeries extends AbstractRawJavaScriptTimeSeriesIndexCreationTask {
  constructor() {
    super();
    this.maps.add("timeSeries.map('Companies', 'HeartRate', function (ts) { return ts.Entries.map(e => ({ beat: e.Value, hour: e.Timestamp.getUTCHours(), user: ts.DocumentId })); })");
  }
}

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  {
    const s = store.openSession();
    await s.store(new Company("Acme"), "companies/1");
    await s.store(new Company("Bolt"), "companies/2");
    const hr = s.timeSeriesFor("companies/1", "HeartRate");
    for (let i = 0; i < 10; i++) hr.append(minutes(i), i, "watch");
    s.timeSeriesFor("companies/1", "Steps").append(minutes(0), 500);
    s.countersFor("companies/1").increment("Likes", 3);
    s.countersFor("companies/2").increment("Likes", 7);
    s.countersFor("companies/2").increment("Shares", 1);
    await s.saveChanges();
  }
  for (const index of [new HeartRates(), new AllSeries(), new Likes(), new JsCounters(), new JsSeries()]) await index.execute(store);
  const definition = await store.maintenance.send(new GetIndexOperation("HeartRates"));
  assert.equal(definition.sourceType, "TimeSeries");
  {
    const s = store.openSession();
    const beats = await s.query({ indexName: "HeartRates", documentType: HeartRateEntry }).waitForNonStaleResults().orderBy("heartBeat", "Long").all();
    assert.deepEqual(beats.map(b => b.heartBeat), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(beats[3].user, "companies/1");
    assert.equal(new Date(beats[3].timestamp).getTime(), minutes(3).getTime());
    const high = await s.query({ indexName: "HeartRates", documentType: HeartRateEntry }).whereGreaterThan("heartBeat", 6).all();
    assert.equal(high.length, 3);
    const series = await s.query({ indexName: "AllSeries" }).waitForNonStaleResults().whereEquals("name", "Steps").all();
    assert.deepEqual(series.map(x => x.value), [500]);
    const likes = await s.query({ indexName: "Likes", documentType: LikesEntry }).waitForNonStaleResults().orderBy("likes", "Long").all();
    assert.deepEqual(likes.map(l => [l.user, l.likes]), [["companies/1", 3], ["companies/2", 7]]);
    const counters = await s.query({ indexName: "JsCounters" }).waitForNonStaleResults().orderBy("name").all();
    assert.deepEqual(counters.map(c => `${c.doc}:${c.name}:${c.value}`), ["companies/1:Likes:3", "companies/2:Likes:7", "companies/2:Shares:1"]);
    const js = await s.query({ indexName: "JsSeries" }).waitForNonStaleResults().all();
    assert.equal(js.length, 10);
    assert.ok(js.every(x => x.hour === 0 && x.user === "companies/1"));
  }
  {
    // A streamed query of a time-series index: one item per entry.
    const s = store.openSession();
    const stream = await s.advanced.stream(s.query({ indexName: "HeartRates", documentType: HeartRateEntry }));
    let count = 0;
    await new Promise((resolve, reject) => { stream.on("data", () => count++); stream.on("end", resolve); stream.on("error", reject); });
    assert.equal(count, 10);
  }
  assert.deepEqual([...await store.maintenance.send(new GetTermsOperation("Likes", "user", null))].sort(), ["companies/1", "companies/2"]);
  {
    // Changes after the index exists: a counter incremented and one deleted, a series appended to.
    const s = store.openSession();
    s.countersFor("companies/1").increment("Likes", 10);
    s.countersFor("companies/2").delete("Likes");
    s.timeSeriesFor("companies/1", "HeartRate").append(minutes(20), 42);
    await s.saveChanges();
  }
  {
    const s = store.openSession();
    const likes = await s.query({ indexName: "Likes", documentType: LikesEntry }).waitForNonStaleResults().all();
    assert.deepEqual(likes.map(l => [l.user, l.likes]), [["companies/1", 13]]);
    const top = await s.query({ indexName: "HeartRates", documentType: HeartRateEntry }).waitForNonStaleResults().orderByDescending("heartBeat", "Long").take(1).all();
    assert.equal(top[0].heartBeat, 42);
  }
  console.log("itemindexes: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
