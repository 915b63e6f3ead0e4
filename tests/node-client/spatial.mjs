// Spatial queries through RavenDB's official Node client (npm ravendb 7.2.6): an index with CreateSpatialField,
// withinRadius (kilometres and miles), within/intersects/disjoint a WKT polygon, orderByDistance /
// orderByDistanceDescending, and a dynamic query on a PointField; each answer is checked against haversine /
// point-in-rectangle brute force over the stored points. Usage: node spatial.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation, PointField, SpatialOptionsFactory, SpatialBounds } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("spatial test timed out"); process.exit(3); }, 120_000);
class Cafe { constructor(name, latitude, longitude) { Object.assign(this, { name, latitude, longitude }); } }
const store = new DocumentStore(url, database);
store.initialize();
const R = 6371.0087714;
const rad = (d) => d * Math.PI / 180;
const haversine = (a, b, c, d) => 2 * R * Math.asin(Math.min(1, Math.sqrt(Math.sin(rad(c - a) / 2) ** 2 + Math.cos(rad(a)) * Math.cos(rad(c)) * Math.sin(rad(d - b) / 2) ** 2)));
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  let seed = 7;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const cafes = [];
  for (let i = 0; i < 200; i++) cafes.push(new Cafe(`cafe ${i}`, 51.3 + random() * 0.4, -0.4 + random() * 0.6)); // London
  {
    const s = store.openSession();
    for (let i = 0; i < cafes.length; i++) await s.store(cafes[i], `cafes/${i}`);
    await s.saveChanges();
  }
  await store.maintenance.send(new PutIndexesOperation({ name: "Cafes/Location",
    maps: new Set(["from c in docs.Cafes select new { c.name, Location = CreateSpatialField(c.latitude, c.longitude) }"]) }));
  const q = (session) => session.query({ indexName: "Cafes/Location", documentType: Cafe }).waitForNonStaleResults();
  const ids = (session, docs) => docs.map(d => Number(session.advanced.getDocumentId(d).split("/")[1]));
  const sorted = (a) => [...a].sort((x, y) => x - y);
  const [lat, lng] = [51.5074, -0.1278];

  // Within a radius, nearest first.
  let session = store.openSession();
  let found = await q(session).spatial("Location", f => f.withinRadius(8, lat, lng)).orderByDistance("Location", lat, lng).all();
  const within8 = cafes.map((c, i) => i).filter(i => haversine(lat, lng, cafes[i].latitude, cafes[i].longitude) <= 8)
    .sort((a, b) => haversine(lat, lng, cafes[a].latitude, cafes[a].longitude) - haversine(lat, lng, cafes[b].latitude, cafes[b].longitude));
  assert.ok(within8.length > 5);
  assert.deepEqual(ids(session, found), within8);

  // Miles, farthest first.
  session = store.openSession();
  found = await q(session).spatial("Location", f => f.withinRadius(3, lat, lng, "Miles")).orderByDistanceDescending("Location", lat, lng).all();
  const within3mi = cafes.map((c, i) => i).filter(i => haversine(lat, lng, cafes[i].latitude, cafes[i].longitude) <= 3 * 1.609344)
    .sort((a, b) => haversine(lat, lng, cafes[b].latitude, cafes[b].longitude) - haversine(lat, lng, cafes[a].latitude, cafes[a].longitude));
  assert.deepEqual(ids(session, found), within3mi);

  // A WKT rectangle: within, intersects (the same for points) and disjoint.
  const box = "POLYGON((-0.2 51.45, -0.05 51.45, -0.05 51.55, -0.2 51.55, -0.2 51.45))";
  const inBox = cafes.map((c, i) => i).filter(i => cafes[i].latitude >= 51.45 && cafes[i].latitude <= 51.55 && cafes[i].longitude >= -0.2 && cafes[i].longitude <= -0.05);
  session = store.openSession();
  assert.deepEqual(sorted(ids(session, await q(session).spatial("Location", f => f.within(box)).all())), inBox);
  session = store.openSession();
  assert.deepEqual(sorted(ids(session, await q(session).spatial("Location", f => f.intersects(box)).all())), inBox);
  session = store.openSession();
  assert.deepEqual(sorted(ids(session, await q(session).spatial("Location", f => f.disjoint(box)).all())), cafes.map((c, i) => i).filter(i => !inBox.includes(i)));

  // A dynamic query on the documents' coordinates.
  session = store.openSession();
  found = await session.query({ collection: "Cafes", documentType: Cafe })
    .spatial(new PointField("latitude", "longitude"), f => f.withinRadius(8, lat, lng))
    .orderByDistance(new PointField("latitude", "longitude"), lat, lng).all();
  assert.deepEqual(ids(session, found), within8);

  await assert.rejects(q(store.openSession()).spatial("Location", f => f.within("POLYGON((1 1, 2 2))")).all(), (e) => e.name === "InvalidQueryException" && /WKT/.test(e.message));
  // A Cartesian field (SpatialOptionsFactory.cartesian()), quad tree over 0..1000 and bounding box: x y coordinates,
  // Euclidean radii, and boxes related by the BoundingBox strategy.
  class Part { constructor(name, wkt) { Object.assign(this, { name, wkt }); } }
  {
    const s = store.openSession();
    await s.store(new Part("origin", "POINT (10 10)"), "parts/1");
    await s.store(new Part("far", "POINT (900 100)"), "parts/2");
    await s.store(new Part("triangle", "POLYGON ((0 0, 80 0, 0 80, 0 0))"), "parts/3");
    await s.saveChanges();
  }
  const factory = new SpatialOptionsFactory();
  const fields = (options) => ({ wkt: { spatial: options } });
  const map = "from p in docs.Parts select new { p.name, wkt = CreateSpatialField(p.wkt) }";
  await store.maintenance.send(new PutIndexesOperation(
    { name: "Parts/Plane", maps: new Set([map]), fields: fields(factory.cartesian().quadPrefixTreeIndex(12, new SpatialBounds(0, 0, 1000, 1000))) },
    { name: "Parts/Boxes", maps: new Set([map]), fields: fields(factory.cartesian().boundingBoxIndex()) }));
  const parts = async (index, build) => (await build(store.openSession().query({ indexName: index, documentType: Part }).waitForNonStaleResults()).all()).map(p => p.name).sort();
  assert.deepEqual(await parts("Parts/Plane", x => x.spatial("wkt", f => f.withinRadius(5, 10, 12))), ["origin"]);
  assert.deepEqual(await parts("Parts/Plane", x => x.spatial("wkt", f => f.within("POLYGON ((800 0, 1000 0, 1000 200, 800 200, 800 0))"))), ["far"]);
  assert.deepEqual(await parts("Parts/Plane", x => x.spatial("wkt", f => f.intersects("POINT (70 70)"))), []);
  assert.deepEqual(await parts("Parts/Boxes", x => x.spatial("wkt", f => f.intersects("POINT (70 70)"))), ["triangle"]);
  {
    const s = store.openSession();
    const near = await s.query({ indexName: "Parts/Plane", documentType: Part }).waitForNonStaleResults()
      .spatial("wkt", f => f.within("POLYGON ((1 1, 999 1, 999 999, 1 999, 1 1))")).orderByDistanceDescending("wkt", 0, 0).all();
    assert.deepEqual(near.map(p => p.name), ["far", "origin"]);
  }
  console.log("spatial: ok");
  clearTimeout(timeout);
  store.dispose();
  process.exit(0);
} catch (e) {
  console.error(`spatial failed: ${e.name}: ${e.message}\n${e.stack}`);
  process.exit(1);
}
