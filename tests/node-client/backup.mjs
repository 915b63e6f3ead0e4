// Backup and restore through RavenDB's official Node client (npm ravendb 7.2.x): a periodic Snapshot backup task
// (UpdatePeriodicBackupOperation), a full and then an incremental backup started by hand (StartBackupOperation, the
// operations awaited), its status (GetPeriodicBackupStatusOperation), a restore of the folder into a new database
// (RestoreBackupOperation) holding every document, counter and index, and a task toggled off and deleted.
// Usage: node backup.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, PutIndexesOperation, GetStatisticsOperation, UpdatePeriodicBackupOperation,
  StartBackupOperation, GetPeriodicBackupStatusOperation, RestoreBackupOperation, ToggleOngoingTaskStateOperation,
  DeleteOngoingTaskOperation, OperationCompletionAwaiter,
} from "ravendb";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("backup test timed out"); process.exit(3); }, 120_000);
class Order { constructor(company, freight) { this.company = company; this.freight = freight; } }
const dir = mkdtempSync(join(tmpdir(), "rl-backup-"));
const store = new DocumentStore(url, database);
store.initialize();
async function write(from, to) {
  const s = store.openSession();
  for (let i = from; i <= to; i++)
    await s.store(new Order("companies/" + (i % 7), i), `orders/${i}`);
  await s.saveChanges();
}
async function waitFor(started) {
  // StartBackupOperation answers {operationId, responsibleNode}; the client's awaiter polls /operations/state.
  assert.ok(started.operationId > 0, JSON.stringify(started));
  await new OperationCompletionAwaiter(store.getRequestExecutor(), store.conventions, started.operationId, started.responsibleNode).waitForCompletion();
}
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  await write(1, 100);
  const s = store.openSession();
  s.countersFor("orders/1").increment("Views", 5);
  await s.saveChanges();
  await store.maintenance.send(new PutIndexesOperation({ name: "Orders/ByFreight", maps: new Set(["from o in docs.Orders select new { o.freight }"]) }));

  const { taskId } = await store.maintenance.send(new UpdatePeriodicBackupOperation({
    name: "nightly", backupType: "Snapshot", localSettings: { folderPath: dir },
    fullBackupFrequency: "0 2 * * *", incrementalBackupFrequency: "0 * * * *",
  }));
  assert.ok(taskId > 0);

  await waitFor(await store.maintenance.send(new StartBackupOperation(true, taskId)));
  let status = (await store.maintenance.send(new GetPeriodicBackupStatusOperation(taskId))).status;
  assert.ok(status.lastFullBackup instanceof Date);
  assert.equal(status.isFull, true);
  const folder = status.localBackup.backupDirectory;

  await write(101, 150);
  const d = store.openSession();
  await d.delete("orders/2");
  await d.saveChanges();
  await waitFor(await store.maintenance.send(new StartBackupOperation(false, taskId)));
  status = (await store.maintenance.send(new GetPeriodicBackupStatusOperation(taskId))).status;
  assert.equal(status.isFull, false);
  assert.ok(status.lastIncrementalBackup instanceof Date);
  assert.equal(status.localBackup.backupDirectory, folder);
  const files = readdirSync(folder).sort();
  assert.equal(files.length, 2, files.join(", "));
  assert.ok(files[0].endsWith(".ravendb-snapshot") && files[1].endsWith(".ravendb-incremental-backup"), files.join(", "));

  await write(151, 160); // after the backup: not restored
  const restoreOp = await store.maintenance.server.send(new RestoreBackupOperation({ databaseName: database + "-restored", backupLocation: folder, type: "Local" }));
  await restoreOp.waitForCompletion();

  const copy = new DocumentStore(url, database + "-restored");
  copy.initialize();
  try {
    const stats = await copy.maintenance.send(new GetStatisticsOperation());
    assert.equal(stats.countOfDocuments, 149);
    assert.ok(stats.indexes.some(i => i.name === "Orders/ByFreight"));
    const c = copy.openSession();
    assert.equal((await c.load("orders/150")).freight, 150);
    assert.equal(await c.load("orders/2"), null);
    assert.equal(await c.load("orders/151"), null);
    assert.equal(await c.countersFor("orders/1").get("Views"), 5);
    const heavy = await c.query({ indexName: "Orders/ByFreight" }).whereGreaterThan("freight", 140).waitForNonStaleResults().all();
    assert.equal(heavy.length, 10);
  } finally {
    copy.dispose();
  }

  await store.maintenance.send(new ToggleOngoingTaskStateOperation(taskId, "Backup", true));
  await store.maintenance.send(new DeleteOngoingTaskOperation(taskId, "Backup"));
  await assert.rejects(store.maintenance.send(new GetPeriodicBackupStatusOperation(taskId)));
  console.log("backup: ok (a full and an incremental snapshot restored into a new database: 149 documents, a counter and an index)");
} finally {
  store.dispose();
  rmSync(dir, { recursive: true, force: true });
  clearTimeout(timeout);
}
