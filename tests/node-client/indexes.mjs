// Index definitions through RavenDB's official Node client (npm ravendb 7.2.6): AbstractJavaScriptIndexCreationTask
// (map with load(), fan-out, map-reduce with groupBy/aggregate, additional sources), AbstractCsharpIndexCreationTask
// (C# map-reduce as text, multi-map), IndexCreation.createIndexes, queries over reduce results (filter, order,
// projection), and an IndexCompilationException for bad C#. Every figure is checked against the stored data.
// Usage: node indexes.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, AbstractJavaScriptIndexCreationTask, AbstractCsharpIndexCreationTask,
  AbstractCsharpMultiMapIndexCreationTask, IndexCreation, PutIndexesOperation } from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("indexes test timed out"); process.exit(3); }, 120_000);
class Order { constructor(company, lines) { Object.assign(this, { company, lines }); } }
class Company { constructor(name, country) { Object.assign(this, { name, country }); } }

class Orders_ByCompanyCountry extends AbstractJavaScriptIndexCreationTask {
  constructor() {
    super();
    const { load } = this.mapUtils();
    this.map(Order, o => { const c = load(o.company, "Companies"); return { company: o.company, country: c.country, lineCount: o.lines.length }; });
  }
}
class Orders_TotalsJs extends AbstractJavaScriptIndexCreationTask {
  constructor() {
    super();
    this.map(Order, o => ({ company: o.company, count: 1, total: lineTotal(o.lines) }));
    this.reduce(r => r.groupBy(x => x.company).aggregate(g => ({ company: g.key, count: g.values.reduce((a, v) => a + v.count, 0), total: g.values.reduce((a, v) => a + v.total, 0) })));
    this.addSource("lineTotal", function lineTotal(lines) { return lines.reduce((s, l) => s + l.quantity * l.price, 0); });
  }
}
class Products_SalesJs extends AbstractJavaScriptIndexCreationTask {
  constructor() {
    super();
    this.map(Order, o => o.lines.map(l => ({ product: l.product, quantity: l.quantity })));
    this.reduce(r => r.groupBy(x => x.product).aggregate(g => ({ product: g.key, quantity: g.values.reduce((a, v) => a + v.quantity, 0) })));
  }
}
class Orders_TotalsCs extends AbstractCsharpIndexCreationTask {
  constructor() {
    super();
    this.map = "from o in docs.Orders select new { o.company, count = 1, total = o.lines.Sum(l => l.quantity * l.price) }";
    this.reduce = "from r in results group r by r.company into g select new { company = g.Key, count = g.Sum(x => x.count), total = g.Sum(x => x.total) }";
  }
}
class Names_Everywhere extends AbstractCsharpMultiMapIndexCreationTask {
  constructor() {
    super();
    this.addMap("from c in docs.Companies select new { name = c.name, kind = \"company\" }");
    this.addMap("from o in docs.Orders select new { name = o.company, kind = \"order\" }");
  }
}

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const companies = [new Company("Alfreds", "Germany"), new Company("Bon app", "France"), new Company("Chop-suey", "Switzerland")];
  const orders = [];
  for (let i = 0; i < 40; i++)
    orders.push(new Order(`companies/${i % 3}`, Array.from({ length: i % 4 }, (_, k) => ({ product: `products/${(i + k) % 5}`, quantity: 1 + ((i * k) % 7), price: 10 + k }))));
  {
    const s = store.openSession();
    for (let i = 0; i < companies.length; i++) await s.store(companies[i], `companies/${i}`);
    for (let i = 0; i < orders.length; i++) await s.store(orders[i], `orders/${i}`);
    await s.saveChanges();
  }
  await IndexCreation.createIndexes([new Orders_ByCompanyCountry(), new Orders_TotalsJs(), new Products_SalesJs(), new Orders_TotalsCs(), new Names_Everywhere()], store);

  const wait = (q) => q.waitForNonStaleResults();
  // JavaScript map with load(): the company's country.
  const french = await wait(store.openSession().query({ indexName: "Orders/ByCompanyCountry", documentType: Order })).whereEquals("country", "France").all();
  assert.equal(french.length, orders.filter(o => o.company === "companies/1").length);

  // Map-reduce, JavaScript and C#: totals by company equal the data.
  const want = new Map();
  for (const o of orders) {
    const e = want.get(o.company) ?? { count: 0, total: 0 };
    e.count++; e.total += o.lines.reduce((s, l) => s + l.quantity * l.price, 0);
    want.set(o.company, e);
  }
  for (const index of ["Orders/TotalsJs", "Orders/TotalsCs"]) {
    const rows = await wait(store.openSession().query({ indexName: index })).orderBy("company").all();
    assert.deepEqual(rows.map(r => [r.company, r.count, r.total]), [...want.entries()].sort().map(([k, v]) => [k, v.count, v.total]), index);
    const big = await wait(store.openSession().query({ indexName: index })).whereGreaterThan("total", 400).orderByDescending("total").selectFields(["company", "total"]).all();
    assert.deepEqual(big.map(r => r.company), [...want.entries()].filter(([, v]) => v.total > 400).sort((a, b) => b[1].total - a[1].total).map(([k]) => k), index);
  }

  // Fan-out map-reduce: quantities by product; then an order changes and only that is re-reduced.
  const sales = async () => new Map((await wait(store.openSession().query({ indexName: "Products/SalesJs" })).all()).map(r => [r.product, r.quantity]));
  const expectSales = () => {
    const m = new Map();
    for (const o of orders) for (const l of o.lines) m.set(l.product, (m.get(l.product) ?? 0) + l.quantity);
    return m;
  };
  assert.deepEqual(await sales(), expectSales());
  {
    const s = store.openSession();
    const o = await s.load("orders/3");
    o.lines = [{ product: "products/9", quantity: 100, price: 1 }];
    orders[3].lines = o.lines;
    await s.delete("orders/5");
    orders[5].lines = [];
    await s.saveChanges();
  }
  assert.deepEqual(await sales(), expectSales());

  // Multi-map: companies and orders in one index.
  const named = await wait(store.openSession().query({ indexName: "Names/Everywhere" })).whereEquals("kind", "company").all();
  assert.equal(named.length, 3);

  // JavaScript projections through rawQuery: a declared function, an alias, load.
  const projected = await store.openSession().advanced
    .rawQuery("declare function total(o) { return o.lines.reduce((s, l) => s + l.quantity * l.price, 0); } from Orders as o load o.company as c select { company: c.name, total: total(o) }").all();
  const live = orders.filter((_, i) => i !== 5);
  assert.equal(projected.length, live.length);
  const alfreds = live.filter(o => o.company === "companies/0").reduce((s, o) => s + o.lines.reduce((t, l) => t + l.quantity * l.price, 0), 0);
  assert.equal(projected.filter(p => p.company === "Alfreds").reduce((s, p) => s + p.total, 0), alfreds);

  // A C# index that does not compile: IndexCompilationException naming the line and column.
  await assert.rejects(store.maintenance.send(new PutIndexesOperation({ name: "Bad", maps: new Set(["from o in docs.Orders select new { x = o.company.NoSuch(1, ) }"]) })),
    (e) => e.name === "IndexCompilationException" && /line 1, column/.test(e.message));
  console.log("indexes: ok");
} catch (e) {
  console.error("indexes failed:", e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
