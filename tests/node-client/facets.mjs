// Facets through RavenDB's official Node client (npm ravendb 7.2.6): field facets with options, range facets,
// aggregations (sum/min/max/average, one value per aggregated field), all-results aggregation, a facet setup
// document (aggregateUsing), dynamic (auto index) facets, and the 400s for bad facets. Every count is checked
// against the same numbers computed here from the stored data. Usage: node facets.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation, Facet, RangeBuilder, FacetSetup } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("facets test timed out"); process.exit(3); }, 120_000);
class Camera { constructor(manufacturer, cost, megapixels, stock) { Object.assign(this, { manufacturer, cost, megapixels, stock }); } }
const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const makers = ["Canon", "Nikon", "Sony", "Fuji", "Leica"];
  const cameras = [];
  for (let i = 0; i < 60; i++)
    cameras.push(new Camera(makers[(i * 7) % 5 === 4 && i % 2 ? 0 : (i * 7) % 5], 50 + ((i * 37) % 500), 10 + (i % 15), i % 9));
  {
    const s = store.openSession();
    for (let i = 0; i < cameras.length; i++) await s.store(cameras[i], `cameras/${i}`);
    await s.saveChanges();
  }
  await store.maintenance.send(new PutIndexesOperation({ name: "Cameras/ForFacets",
    maps: new Set(["from c in docs.Cameras select new { c.manufacturer, c.cost, c.megapixels, c.stock }"]) }));
  const q = () => store.openSession().query({ indexName: "Cameras/ForFacets", documentType: Camera }).waitForNonStaleResults();

  // Expected figures, from the data itself.
  const byMaker = new Map();
  for (const c of cameras) {
    const k = c.manufacturer.toLowerCase();
    const e = byMaker.get(k) ?? { count: 0, sum: 0, max: -Infinity, min: Infinity };
    e.count++; e.sum += c.cost; e.max = Math.max(e.max, c.cost); e.min = Math.min(e.min, c.cost);
    byMaker.set(k, e);
  }
  const names = [...byMaker.keys()].sort();

  // Field facet with aggregations: values in term order, one value per aggregated field.
  const f = new Facet();
  f.fieldName = "manufacturer";
  const r1 = await q().aggregateBy(b => b.byField("manufacturer").sumOn("cost").maxOn("cost").minOn("megapixels")).execute();
  const maker = r1.manufacturer;
  const costValues = maker.values.filter(v => v.name === "cost");
  assert.deepEqual(costValues.map(v => v.range), names);
  for (const v of costValues) {
    const e = byMaker.get(v.range);
    assert.equal(v.count, e.count, v.range);
    assert.ok(Math.abs(v.sum - e.sum) < 1e-9, `${v.range} sum ${v.sum} vs ${e.sum}`);
    assert.equal(v.max, e.max);
  }
  const mp = maker.values.filter(v => v.name === "megapixels");
  for (const v of mp)
    assert.equal(v.min, Math.min(...cameras.filter(c => c.manufacturer.toLowerCase() === v.range).map(c => c.megapixels)));

  // Options: count order, paging and the remaining terms.
  const byCount = [...byMaker.entries()].sort((a, b) => b[1].count - a[1].count || (a[0] < b[0] ? -1 : 1));
  const r2 = await q().aggregateBy(b => b.byField("manufacturer").withOptions({ termSortMode: "CountDesc", pageSize: 2, start: 0, includeRemainingTerms: true })).execute();
  assert.deepEqual(r2.manufacturer.values.map(v => [v.range, v.count]), byCount.slice(0, 2).map(([k, e]) => [k, e.count]));
  assert.deepEqual(r2.manufacturer.remainingTerms, byCount.slice(2).map(([k]) => k));
  assert.equal(r2.manufacturer.remainingTermsCount, byCount.length - 2);
  assert.equal(r2.manufacturer.remainingHits, byCount.slice(2).reduce((n, [, e]) => n + e.count, 0));

  // Range facets (RangeBuilder) with an aggregation, and a where clause narrowing the matches.
  const cost = RangeBuilder.forPath("cost");
  const r3 = await store.openSession().query({ indexName: "Cameras/ForFacets", documentType: Camera }).waitForNonStaleResults()
    .whereGreaterThanOrEqual("megapixels", 15)
    .aggregateBy(b => b.byRanges(cost.isLessThan(200), cost.isGreaterThanOrEqualTo(200).isLessThan(400), cost.isGreaterThanOrEqualTo(400)).averageOn("stock"))
    .execute();
  const kept = cameras.filter(c => c.megapixels >= 15);
  const ranges = [c => c.cost < 200, c => c.cost >= 200 && c.cost < 400, c => c.cost >= 400];
  assert.equal(r3.cost.values.length, 3);
  r3.cost.values.forEach((v, i) => {
    const inRange = kept.filter(ranges[i]);
    assert.equal(v.count, inRange.length, v.range);
    const avg = inRange.reduce((n, c) => n + c.stock, 0) / inRange.length;
    assert.ok(Math.abs(v.average - avg) < 1e-9, `${v.range}: ${v.average} vs ${avg}`);
  });
  assert.equal(r3.cost.values[0].range, "cost < 200");

  // All results, and a facet setup document.
  const r4 = await q().aggregateBy(b => b.allResults().sumOn("stock")).execute();
  assert.equal(r4["@AllResults"].values[0].count, cameras.length);
  assert.equal(r4["@AllResults"].values[0].sum, cameras.reduce((n, c) => n + c.stock, 0));
  {
    const setup = new FacetSetup();
    const byMakerFacet = new Facet();
    byMakerFacet.fieldName = "manufacturer";
    setup.facets = [byMakerFacet];
    setup.rangeFacets = [{ ranges: ["megapixels < 15", "megapixels >= 15"] }];
    const s = store.openSession();
    await s.store(setup, "facets/cameras");
    await s.saveChanges();
  }
  const r5 = await q().aggregateUsing("facets/cameras").execute();
  assert.deepEqual(r5.manufacturer.values.map(v => [v.range, v.count]), names.map(n => [n, byMaker.get(n).count]));
  assert.deepEqual(r5.megapixels.values.map(v => v.count), [cameras.filter(c => c.megapixels < 15).length, cameras.filter(c => c.megapixels >= 15).length]);

  // A dynamic query: the auto index is created with the facet's field.
  const r6 = await store.openSession().query({ collection: "Cameras", documentType: Camera }).aggregateBy(b => b.byField("manufacturer")).execute();
  assert.deepEqual(r6.manufacturer.values.map(v => [v.range, v.count]), names.map(n => [n, byMaker.get(n).count]));

  // Bad facets: a field the index does not have, a missing setup document.
  await assert.rejects(q().aggregateBy(b => b.byField("color")).execute(), (e) => e.name === "InvalidQueryException" && /color/.test(e.message));
  await assert.rejects(q().aggregateUsing("facets/none").execute(), (e) => e.name === "InvalidQueryException" && /facets\/none/.test(e.message));
  console.log("facets: ok");
  clearTimeout(timeout);
  store.dispose();
  process.exit(0);
} catch (e) {
  console.error(`facets failed: ${e.name}: ${e.message}\n${e.stack}`);
  process.exit(1);
}
