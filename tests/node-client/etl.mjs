// ETL through RavenDB's official Node client (npm ravendb 7.2.x): Raven and Sql connection strings
// (PutConnectionStringOperation), a RavenDB ETL task into a second database on the same server and an SQL ETL task into
// the PostgreSQL named by ETL_PG (AddEtlOperation), the Raven task's script changed (UpdateEtlOperation) and reset
// (ResetEtlOperation) so every document is loaded again under it; GetOngoingTaskInfoOperation reports both tasks.
// The caller checks PostgreSQL's rows after the script exits.
// Usage: ETL_PG='Host=..;Port=..' node etl.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, PutConnectionStringOperation, RavenConnectionString, SqlConnectionString,
  AddEtlOperation, UpdateEtlOperation, ResetEtlOperation, RavenEtlConfiguration, SqlEtlConfiguration, Transformation,
  GetOngoingTaskInfoOperation,
} from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const destination = database + "_copy";
const timeout = setTimeout(() => { console.error("etl test timed out"); process.exit(3); }, 120_000);
class Order { constructor(customer, lines) { this.customer = customer; this.lines = lines; } }
const source = new DocumentStore(url, database);
source.conventions.findCollectionNameForObjectLiteral = () => "Orders";
source.initialize();
const copy = new DocumentStore(url, destination);
copy.initialize();
async function eventually(what, condition) {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline)
      throw new Error("timed out waiting for " + what);
    await new Promise(r => setTimeout(r, 50));
  }
}
async function load(store, id) {
  const s = store.openSession();
  return await s.load(id);
}
try {
  await source.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  await copy.maintenance.server.send(new CreateDatabaseOperation({ databaseName: destination }));
  {
    const s = source.openSession();
    for (let i = 1; i <= 10; i++)
      await s.store(new Order("customers/" + i, [{ product: "products/1", quantity: i, price: 2 }]), "orders/" + i);
    await s.saveChanges();
  }

  const raven = Object.assign(new RavenConnectionString(), { name: "copy", database: destination, topologyDiscoveryUrls: [url] });
  assert.ok((await source.maintenance.send(new PutConnectionStringOperation(raven))).raftCommandIndex > 0);
  const sql = Object.assign(new SqlConnectionString(), { name: "pg", factoryName: "Npgsql", connectionString: process.env.ETL_PG });
  assert.ok((await source.maintenance.send(new PutConnectionStringOperation(sql))).raftCommandIndex > 0);

  // RavenDB ETL: a summary per order into the copy.
  const transformation = Object.assign(new Transformation(), { name: "summary", collections: ["Orders"], script: "loadToOrders({ Customer: this.customer, Quantity: this.lines[0].quantity });" });
  const ravenEtl = Object.assign(new RavenEtlConfiguration(), { name: "to-copy", connectionStringName: "copy", transforms: [transformation] });
  const added = await source.maintenance.send(new AddEtlOperation(ravenEtl));
  assert.ok(added.taskId > 0);
  await eventually("orders/10 in the copy", async () => (await load(copy, "orders/10"))?.Quantity === 10);

  // SQL ETL: one row per order.
  const sqlEtl = Object.assign(new SqlEtlConfiguration(), {
    name: "to-pg", connectionStringName: "pg",
    sqlTables: [{ tableName: "Orders", documentIdColumn: "Id", insertOnlyMode: false }],
    transforms: [Object.assign(new Transformation(), { name: "rows", collections: ["Orders"], script: "loadToOrders({ Customer: this.customer, Total: this.lines[0].quantity * this.lines[0].price });" })],
  });
  const sqlAdded = await source.maintenance.send(new AddEtlOperation(sqlEtl));
  assert.ok(sqlAdded.taskId > 0);
  await eventually("the SQL task loading everything", async () => {
    const info = await source.maintenance.send(new GetOngoingTaskInfoOperation(sqlAdded.taskId, "SqlEtl"));
    const t = (info?.transformations ?? info?.Transformations)?.[0];
    return info && info.taskConnectionStatus === "Active" && (t?.etagLag ?? t?.EtagLag) === 0;
  });

  // A new script, then a reset: every copy is rewritten under it.
  transformation.script = "loadToOrders({ Customer: this.customer, Quantity: this.lines[0].quantity, Doubled: this.lines[0].quantity * 2 });";
  const updated = await source.maintenance.send(new UpdateEtlOperation(added.taskId, ravenEtl));
  assert.equal(updated.taskId, added.taskId);
  await source.maintenance.send(new ResetEtlOperation("to-copy", "summary"));
  await eventually("orders/1 rewritten", async () => (await load(copy, "orders/1"))?.Doubled === 2);
  await eventually("orders/10 rewritten", async () => (await load(copy, "orders/10"))?.Doubled === 20);

  const info = await source.maintenance.send(new GetOngoingTaskInfoOperation(added.taskId, "RavenEtl"));
  assert.equal(info.taskName, "to-copy");
  assert.equal(info.taskType, "RavenEtl");
  assert.equal(info.destinationDatabase, destination);
  console.log("etl: ok");
} finally {
  clearTimeout(timeout);
  source.dispose();
  copy.dispose();
}
