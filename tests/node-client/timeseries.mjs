// Time series through RavenDB's official Node client (npm ravendb 7.2.6): session timeSeriesFor append (with tags and
// several values), get with ranges and paging, delete ranges; @timeseries/HasTimeSeries in metadata; incremental
// series (INC:) with increment; time series included on load and in queries; TimeSeriesBatchOperation and GetTimeSeriesOperation; GetTimeSeriesStatisticsOperation;
// bulk insert of time series; RQL select timeseries(...) raw, with where on tag and value, and grouped aggregations;
// ConfigureTimeSeriesOperation with chained rollup policies and raw retention run by the background task, value names;
// out-of-order appends in one request refused; a missing document refused; deleting the document deleting its series.
// Usage: node timeseries.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, TimeSeriesBatchOperation, TimeSeriesOperation, AppendOperation, GetTimeSeriesOperation,
  GetTimeSeriesStatisticsOperation, TimeSeriesAggregationResult, TimeSeriesConfiguration, TimeSeriesCollectionConfiguration, TimeSeriesPolicy,
  RawTimeSeriesPolicy, TimeValue, ConfigureTimeSeriesOperation, ConfigureTimeSeriesValueNamesOperation,
} from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("timeseries test timed out"); process.exit(3); }, 120_000);
class User { constructor(name) { this.name = name; } }
const base = new Date(Date.UTC(2026, 0, 1, 0, 0, 0));
const at = (seconds) => new Date(base.getTime() + seconds * 1000);

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  {
    const s = store.openSession();
    await s.store(new User("Ann"), "users/1");
    const hr = s.timeSeriesFor("users/1", "HeartRate");
    for (let i = 0; i < 3600; i++) hr.append(at(i), 60 + (i % 40), i % 600 === 0 ? "watches/fitbit" : undefined);
    s.timeSeriesFor("users/1", "Location").append(at(0), [52.5, 13.4]);
    await s.saveChanges();
  }
  {
    const s = store.openSession();
    const user = await s.load("users/1");
    const meta = s.advanced.getMetadataFor(user);
    assert.match(meta["@flags"], /HasTimeSeries/);
    assert.deepEqual([...meta["@timeseries"]].sort(), ["HeartRate", "Location"]);
    const all = await s.timeSeriesFor("users/1", "HeartRate").get();
    assert.equal(all.length, 3600);
    assert.equal(all[100].value, 60 + 100 % 40);
    assert.equal(all[600].tag, "watches/fitbit");
    assert.ok(all[601].tag == null);
    const range = await s.timeSeriesFor("users/1", "HeartRate").get(at(10), at(19));
    assert.deepEqual(range.map(e => e.value), Array.from({ length: 10 }, (_, k) => 60 + ((10 + k) % 40)));
    const page = await store.openSession().timeSeriesFor("users/1", "HeartRate").get(5, 3);
    assert.deepEqual(page.map(e => e.timestamp.getTime()), [at(5), at(6), at(7)].map(d => d.getTime()));
    const loc = await s.timeSeriesFor("users/1", "Location").get();
    assert.deepEqual(loc[0].values, [52.5, 13.4]);
  }
  {
    // include time series on load: the range comes with the document
    const s = store.openSession();
    await s.load("users/1", { includes: i => i.includeTimeSeries("HeartRate", at(0), at(99)) });
    const n = s.advanced.numberOfRequests;
    const included = await s.timeSeriesFor("users/1", "HeartRate").get(at(0), at(99));
    assert.equal(included.length, 100);
    assert.equal(s.advanced.numberOfRequests, n);
  }
  {
    // include time series in a query
    const s = store.openSession();
    const users = await s.query({ collection: "Users" }).whereEquals("name", "Ann")
      .include(i => i.includeTimeSeries("HeartRate", at(0), at(49))).all();
    assert.equal(users.length, 1);
    const n = s.advanced.numberOfRequests;
    assert.equal((await s.timeSeriesFor(users[0], "HeartRate").get(at(0), at(49))).length, 50);
    assert.equal(s.advanced.numberOfRequests, n);
  }
  {
    // replace an entry, delete a range
    const s = store.openSession();
    const hr = s.timeSeriesFor("users/1", "HeartRate");
    hr.append(at(5), 999);
    hr.deleteAt(at(6));
    hr.delete(at(100), at(199));
    await s.saveChanges();
    const after = await store.openSession().timeSeriesFor("users/1", "HeartRate").get();
    assert.equal(after.length, 3600 - 1 - 100);
    assert.equal(after[5].value, 999);
    assert.equal(after[6].timestamp.getTime(), at(7).getTime());
  }
  {
    // incremental
    const s = store.openSession();
    const views = s.incrementalTimeSeriesFor("users/1", "INC:Views");
    views.increment(at(0), 5);
    views.increment(at(0), 2); // the client keeps one increment per time and session: the last one
    views.increment(at(60), 1);
    await s.saveChanges();
    const s2 = store.openSession();
    s2.incrementalTimeSeriesFor("users/1", "INC:Views").increment(at(0), 10);
    await s2.saveChanges();
    const v = await store.openSession().incrementalTimeSeriesFor("users/1", "INC:Views").get();
    assert.deepEqual(v.map(e => e.value), [12, 1]); // 2, then +10 in a second session
    assert.ok(v[0].tag.startsWith("TC:INC-"), v[0].tag);
    // an increment and a decrement of one entry: one node's part, the sum as the value (returnFullResults)
    const s3 = store.openSession();
    s3.incrementalTimeSeriesFor("users/1", "INC:Views").increment(at(60), -1);
    await s3.saveChanges();
    const full = await store.operations.send(new GetTimeSeriesOperation("users/1", "INC:Views", null, null, 0, 10, null, true));
    assert.equal(full.totalResults, 2);
    assert.equal(full.entries[1].value, 0);
    assert.equal(Object.keys(full.entries[1].nodeValues).length, 1);
    assert.deepEqual(Object.values(full.entries[0].nodeValues), [[12]]);
  }
  {
    // operations and statistics
    const op = new TimeSeriesOperation("Temperature");
    op.append(new AppendOperation(at(0), [20.5], "sensors/1"));
    op.append(new AppendOperation(at(1), [20.7]));
    await store.operations.send(new TimeSeriesBatchOperation("users/1", op));
    const got = await store.operations.send(new GetTimeSeriesOperation("users/1", "Temperature"));
    assert.equal(got.totalResults, 2);
    assert.equal(got.entries[0].tag, "sensors/1");
    const stats = await store.operations.send(new GetTimeSeriesStatisticsOperation("users/1"));
    const hr = stats.timeSeries.find(t => t.name === "HeartRate");
    assert.equal(hr.numberOfEntries, 3499);
    assert.equal(hr.startDate.getTime(), at(0).getTime());
    assert.equal(hr.endDate.getTime(), at(3599).getTime());
    await assert.rejects(store.operations.send(new TimeSeriesBatchOperation("users/404", op)), e => e.name === "DocumentDoesNotExistException");
  }
  {
    // bulk insert
    const bulk = store.bulkInsert();
    await bulk.store(new User("Bulk"), "users/bulk");
    const ts = bulk.timeSeriesFor("users/bulk", "HeartRate");
    for (let i = 0; i < 5000; i++) await ts.append(at(i), 70 + (i % 5));
    ts.dispose();
    await bulk.finish();
    const entries = await store.openSession().timeSeriesFor("users/bulk", "HeartRate").get();
    assert.equal(entries.length, 5000);
    assert.equal(entries[4999].value, 74);
  }
  {
    // queries: raw with filters, and aggregations by period
    const s = store.openSession();
    const raw = await s.advanced.rawQuery(
      "from Users where name = 'Ann' select timeseries(from HeartRate between $from and $to where Tag = 'watches/fitbit')")
      .addParameter("from", at(0).toISOString()).addParameter("to", at(3599).toISOString()).all();
    assert.equal(raw[0].timeseries.Count, 6);
    const q = await s.query({ collection: "Users" }).whereEquals("name", "Ann")
      .selectTimeSeries(b => b.raw("from HeartRate between '" + at(0).toISOString() + "' and '" + at(3599).toISOString() + "' group by '1 hour' select min(), max(), avg(), count()"), TimeSeriesAggregationResult)
      .all();
    const agg = q[0].results;
    assert.equal(agg.length, 1);
    assert.equal(agg[0].min[0], 60);
    assert.equal(agg[0].max[0], 999);
    assert.equal(agg[0].count[0], 3499);
    const grouped = await s.advanced.rawQuery("from Users where name = 'Bulk' select timeseries(from HeartRate group by 1m select max(), first()) as hr").all();
    assert.equal(grouped[0].hr.Results.length, Math.ceil(5000 / 60));
    assert.equal(grouped[0].hr.Results[0].Max[0], 74);
    const filtered = await s.advanced.rawQuery("from Users where name = 'Bulk' select timeseries(from HeartRate where Value >= 73 select count())").all();
    assert.equal(filtered[0].timeseries.Results[0].Count[0], 2000);
  }
  {
    // bad input: appends out of time order in one request
    const r = await fetch(`${url}/databases/${database}/timeseries?docId=users/1`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ Name: "HeartRate", Appends: [{ Timestamp: at(10).toISOString(), Values: [1] }, { Timestamp: at(5).toISOString(), Values: [2] }] }),
    });
    assert.equal(r.status, 400);
    assert.match((await r.json()).Message, /time order/);
  }
  {
    // configuration: a rollup policy and raw retention, run by the background task; value names
    const config = new TimeSeriesConfiguration();
    const c = new TimeSeriesCollectionConfiguration();
    c.policies = [new TimeSeriesPolicy("ByThreeMinutes", TimeValue.ofMinutes(3), TimeValue.ofYears(5)), new TimeSeriesPolicy("ByMinute", TimeValue.ofMinutes(1), TimeValue.ofYears(5))];
    c.rawPolicy = new RawTimeSeriesPolicy(TimeValue.ofDays(30));
    config.collections.set("Sensors", c);
    config.policyCheckFrequencyInMs = 1000;
    await store.maintenance.send(new ConfigureTimeSeriesOperation(config));
    await store.maintenance.send(new ConfigureTimeSeriesValueNamesOperation({ collection: "Sensors", timeSeries: "Temp", valueNames: ["Celsius"], update: true }));
    const s = store.openSession();
    await s.store({ name: "s1", "@metadata": { "@collection": "Sensors" } }, "sensors/1");
    const recent = new Date(Date.now() - 10 * 60_000);
    const start = new Date(Math.floor(recent.getTime() / 60_000) * 60_000);
    const temp = s.timeSeriesFor("sensors/1", "Temp");
    for (let i = 0; i < 180; i++) temp.append(new Date(start.getTime() + i * 1000), 20 + (i % 60) / 10);
    temp.append(new Date(Date.now() - 60 * 86_400_000), 99); // older than the raw retention
    await s.saveChanges();
    let rollup;
    for (let i = 0; i < 100; i++) {
      rollup = await store.openSession().timeSeriesFor("sensors/1", "Temp@ByMinute").get();
      if (rollup && rollup.length >= 4) break;
      await new Promise(r => setTimeout(r, 100));
    }
    assert.equal(rollup.length, 4); // the old entry's minute (rolled up before the raw retention removed it), then three
    assert.equal(rollup[1].isRollup, true);
    assert.deepEqual(rollup[0].values, [99, 99, 99, 99, 99, 1]);
    // per minute: first, last, min, max, sum, count of the 60 raw values
    assert.deepEqual(rollup[1].values.map(v => Math.round(v * 100) / 100), [20, 25.9, 20, 25.9, 1377, 60]);
    // ByThreeMinutes rolls up ByMinute (policies chain): each of its entries combines the minute entries of its period.
    let coarse;
    for (let i = 0; i < 100; i++) {
      coarse = await store.openSession().timeSeriesFor("sensors/1", "Temp@ByThreeMinutes").get();
      if (coarse && coarse.length >= 2) break;
      await new Promise(r => setTimeout(r, 100));
    }
    assert.ok(coarse.length >= 2);
    for (const e of coarse) {
      const t = e.timestamp.getTime();
      const fine = rollup.filter(f => f.timestamp.getTime() >= t && f.timestamp.getTime() < t + 180_000);
      assert.equal(e.values[5], fine.reduce((n, f) => n + f.values[5], 0));
      assert.equal(Math.round(e.values[4] * 100), Math.round(fine.reduce((n, f) => n + f.values[4], 0) * 100));
      assert.equal(e.values[2], Math.min(...fine.map(f => f.values[2])));
      assert.equal(e.values[3], Math.max(...fine.map(f => f.values[3])));
      assert.equal(e.values[0], fine[0].values[0]);
      assert.equal(e.values[1], fine[fine.length - 1].values[1]);
    }
    const raw = await store.openSession().timeSeriesFor("sensors/1", "Temp").get();
    assert.equal(raw.length, 180); // the 60-day-old entry went with the raw retention
    const stats = await store.operations.send(new GetTimeSeriesStatisticsOperation("sensors/1"));
    assert.deepEqual(stats.timeSeries.map(t => t.name).sort(), ["Temp", "Temp@ByMinute", "Temp@ByThreeMinutes"]);
  }
  {
    // deleting the document deletes its series
    const s = store.openSession();
    s.delete("users/bulk");
    await s.saveChanges();
    await s.store(new User("again"), "users/bulk");
    await s.saveChanges();
    assert.equal(await store.operations.send(new GetTimeSeriesOperation("users/bulk", "HeartRate")), undefined);
  }
  console.log("timeseries: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
