// A cluster through RavenDB's official Node client (npm ravendb 7.2.x): a store given the three nodes' URLs creates a
// database with replication factor 3 (CreateDatabaseOperation), reads its topology (three members), writes with
// waitForReplicationAfterSaveChanges and reads back with ReadBalanceBehavior RoundRobin; then the node it prefers is
// killed (SIGKILL, by the pid given) and the store keeps writing and reading through the two others (failover), and a
// cluster-wide session stores a document with a compare-exchange value; of two cluster-wide sessions that loaded the
// same version, the second to save is refused (ClusterTransactionConcurrencyException).
// Usage: node cluster.mjs <database> <pid of the first node> <url1> <url2> <url3>.
import { DocumentStore, CreateDatabaseOperation, GetDatabaseTopologyCommand } from "ravendb";
import assert from "node:assert/strict";

const [database, firstPid, ...urls] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("cluster test timed out"); process.exit(3); }, 180_000);
class Order { constructor(n) { this.n = n; } }
const store = new DocumentStore(urls, database);
store.conventions.readBalanceBehavior = "RoundRobin";
store.initialize();

// Written with write assurance on every other live node, so that a round-robin read finds it wherever it goes.
async function writeAndRead(from, to, replicas) {
  const session = store.openSession();
  session.advanced.waitForReplicationAfterSaveChanges({ replicas, timeout: 20_000 });
  for (let i = from; i < to; i++)
    await session.store(new Order(i), "orders/" + i);
  await session.saveChanges();
  for (let i = from; i < to; i++) {
    const s = store.openSession();
    const o = await s.load("orders/" + i);
    assert.ok(o, "orders/" + i + " read back");
    assert.equal(o.n, i);
  }
}

try {
  const created = await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }, 3));
  assert.equal(created.topology.members.length, 3, JSON.stringify(created));

  const executor = store.getRequestExecutor();
  const topology = new GetDatabaseTopologyCommand();
  await executor.execute(topology);
  assert.equal(topology.result.nodes.length, 3, JSON.stringify(topology.result));
  assert.deepEqual(topology.result.nodes.map(n => n.clusterTag).sort(), ["A", "B", "C"]);

  await writeAndRead(0, 30, 2);
  const served = new Set();
  for (let i = 0; i < 6; i++) {
    const s = store.openSession();
    await s.load("orders/0");
    served.add((await s.advanced.getCurrentSessionNode()).clusterTag);
  }
  assert.deepEqual([...served].sort(), ["A", "B", "C"], "round-robin sessions read from every node");
  console.log("written and read through the cluster, round robin over " + [...served].sort().join(", "));

  process.kill(Number(firstPid), "SIGKILL");
  await writeAndRead(30, 60, 1);
  console.log("written and read after node A was killed");

  const clusterWide = store.openSession({ transactionMode: "ClusterWide" });
  await clusterWide.store(new Order(100), "orders/cw");
  clusterWide.advanced.clusterTransaction.createCompareExchangeValue("order-numbers/100", "orders/cw");
  await clusterWide.saveChanges();
  const first = store.openSession({ transactionMode: "ClusterWide" });
  const second = store.openSession({ transactionMode: "ClusterWide" });
  const a = await first.load("orders/cw");
  const b = await second.load("orders/cw");
  a.n = 101;
  b.n = 102;
  await first.saveChanges();
  await assert.rejects(() => second.saveChanges(), e => e.name === "ClusterTransactionConcurrencyException", "the second session loses");
  const check = store.openSession({ transactionMode: "ClusterWide" });
  assert.equal((await check.load("orders/cw")).n, 101);
  assert.equal((await check.advanced.clusterTransaction.getCompareExchangeValue("order-numbers/100")).value, "orders/cw");
  console.log("cluster-wide session transactions through the cluster");
  console.log("cluster: ok");
} catch (e) {
  console.error("cluster.mjs failed:", e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
