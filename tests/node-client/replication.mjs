// Replication through RavenDB's official Node client (npm ravendb 7.2.x): a Raven connection string
// (PutConnectionStringOperation) and an external replication task (UpdateExternalReplicationOperation) from one
// database to another on the same server; a session with waitForReplicationAfterSaveChanges finds its documents on
// the destination as soon as saveChanges returns; a delete follows; with no conflict resolver
// (ModifyConflictSolverOperation) concurrent versions stay in conflict — a load throws DocumentConflictException and
// GetConflictsCommand lists both — until a store resolves it; the task is toggled off and deleted.
// Usage: node replication.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, PutConnectionStringOperation, UpdateExternalReplicationOperation,
  ModifyConflictSolverOperation, GetConflictsCommand, ToggleOngoingTaskStateOperation, DeleteOngoingTaskOperation,
  GetConnectionStringsOperation,
} from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const destination = database + "_copy";
const timeout = setTimeout(() => { console.error("replication test timed out"); process.exit(3); }, 120_000);
class User { constructor(name) { this.name = name; } }
const source = new DocumentStore(url, database);
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
  await copy.maintenance.send(new ModifyConflictSolverOperation(destination, {}, false));

  const put = await source.maintenance.send(new PutConnectionStringOperation({
    name: "to-copy", database: destination, topologyDiscoveryUrls: [url], type: "Raven",
  }));
  assert.ok(put.raftCommandIndex >= 0);
  const strings = await source.maintenance.send(new GetConnectionStringsOperation("to-copy", "Raven"));
  assert.equal(strings.ravenConnectionStrings["to-copy"].database, destination);
  const { taskId } = await source.maintenance.send(new UpdateExternalReplicationOperation({ name: "copy", connectionStringName: "to-copy" }));
  assert.ok(taskId > 0);

  // Write assurance: saveChanges returns once the destination has the batch.
  const s = source.openSession();
  s.advanced.waitForReplicationAfterSaveChanges({ replicas: 1, timeout: 30_000, throwOnTimeout: true });
  await s.store(new User("Ada"), "users/1");
  await s.store(new User("Grace"), "users/2");
  await s.saveChanges();
  const replicated = await load(copy, "users/1");
  assert.equal(replicated.name, "Ada");
  const sourceCv = (await (async () => { const t = source.openSession(); const u = await t.load("users/1"); return t.advanced.getChangeVectorFor(u); })());
  const copyCv = (await (async () => { const t = copy.openSession(); const u = await t.load("users/1"); return t.advanced.getChangeVectorFor(u); })());
  assert.equal(copyCv, sourceCv);

  const d = source.openSession();
  await d.delete("users/2");
  await d.saveChanges();
  await eventually("the delete on the copy", async () => (await load(copy, "users/2")) === null);

  // A concurrent version on the copy: kept in conflict (no resolver), refused on load, listed, resolved by a store.
  const c = copy.openSession();
  await c.store(new User("Copy's Ada"), "users/3");
  await c.saveChanges();
  const o = source.openSession();
  await o.store(new User("Source's Ada"), "users/3");
  await o.saveChanges();
  await eventually("the conflict on the copy", async () => {
    try { await load(copy, "users/3"); return false; } catch (e) { return e.name === "DocumentConflictException"; }
  });
  const conflicts = new GetConflictsCommand("users/3", copy.conventions);
  await copy.getRequestExecutor().execute(conflicts);
  assert.equal(conflicts.result.results.length, 2);
  const r = copy.openSession();
  await r.store(new User("Resolved"), "users/3");
  await r.saveChanges();
  assert.equal((await load(copy, "users/3")).name, "Resolved");

  await source.maintenance.send(new ToggleOngoingTaskStateOperation(taskId, "Replication", true));
  await source.maintenance.send(new DeleteOngoingTaskOperation(taskId, "Replication"));
  console.log("replication: ok");
} finally {
  clearTimeout(timeout);
  source.dispose();
  copy.dispose();
}
