// RavenDB's official Node client (npm ravendb 7.2.6) against a secured RavenLite (issue 27): authOptions with a PFX
// client certificate and the CA. As the well-known ClusterAdmin: create the database, register a Read-only
// certificate (PutClientCertificateOperation), list certificates, session store/load/query, a static index and its
// query, bulk insert, and a data subscription over the TLS TCP port. As the Read-only certificate: loads and queries
// work, every write is refused with the client's AuthorizationException. Without a certificate: no request succeeds.
// Usage: node secured.mjs <https-url> <database> <cert-dir holding ca.pem, admin.pfx, reader.pfx, reader.pem>.
// Run with NODE_EXTRA_CA_CERTS=<cert-dir>/ca.pem so the certificate-less store trusts the server and fails for the
// missing client certificate alone.
import {
  DocumentStore, CreateDatabaseOperation, PutClientCertificateOperation, GetCertificatesOperation, PutIndexesOperation,
  IndexDefinition, GetDatabaseNamesOperation,
} from "ravendb";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [url, database, certDir] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("secured test timed out"); process.exit(3); }, 120_000);
const step = (name) => console.log(`step: ${name}`);
const ca = readFileSync(join(certDir, "ca.pem"));
const storeWith = (pfx) => {
  const store = new DocumentStore(url, database, pfx ? { certificate: readFileSync(join(certDir, pfx)), type: "pfx", ca } : undefined);
  store.conventions.findCollectionNameForObjectLiteral = () => null;
  return store.initialize();
};
class Order { constructor(company, freight) { this.company = company; this.freight = freight; } }

const admin = storeWith("admin.pfx");
const reader = storeWith("reader.pfx");
const anonymous = storeWith(null);
try {
  step("no certificate: refused");
  await assert.rejects(anonymous.maintenance.server.send(new GetDatabaseNamesOperation(0, 10)), (e) => {
    console.log(`  ${e.name}: ${e.message.split("\n")[0]}`);
    return /client certificate/.test(e.message);
  });

  step("admin: create database, register a Read-only certificate, list certificates");
  await admin.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const readerPem = readFileSync(join(certDir, "reader.pem"), "utf8");
  const readerDer = readerPem.split("-----END CERTIFICATE-----")[0].replace(/-----BEGIN CERTIFICATE-----|\s/g, "");
  await admin.maintenance.server.send(new PutClientCertificateOperation("reader", readerDer, { [database]: "Read" }, "ValidUser"));
  const certs = await admin.maintenance.server.send(new GetCertificatesOperation(0, 10));
  assert.deepEqual(certs.map(c => c.name), ["reader"]);
  assert.equal(certs[0].permissions[database], "Read");
  console.log(`  registered: ${certs.map(c => `${c.name} ${c.securityClearance} ${JSON.stringify(c.permissions)}`).join("; ")}`);

  step("admin: session store, load, query");
  {
    const session = admin.openSession();
    for (let i = 1; i <= 3; i++)
      await session.store(new Order(`companies/${i}`, i * 10), `orders/${i}`);
    await session.saveChanges();
  }
  {
    const session = admin.openSession();
    assert.equal((await session.load("orders/2")).freight, 20);
    const big = await session.query({ collection: "Orders" }).whereGreaterThan("freight", 15).all();
    assert.equal(big.length, 2);
  }

  step("admin: static index and its query");
  {
    const index = new IndexDefinition();
    index.name = "Orders/ByCompany";
    index.maps = new Set(["from o in docs.Orders select new { o.company, o.freight }"]);
    await admin.maintenance.send(new PutIndexesOperation(index));
    const session = admin.openSession();
    const hits = await session.query({ indexName: "Orders/ByCompany" }).waitForNonStaleResults().whereEquals("company", "companies/3").all();
    assert.deepEqual(hits.map(h => h.freight), [30]);
  }

  step("admin: bulk insert");
  {
    const bulk = admin.bulkInsert();
    for (let i = 100; i < 1100; i++)
      await bulk.store(new Order(`companies/${i % 7}`, i), `orders/${i}`);
    await bulk.finish();
    const count = await admin.openSession().query({ collection: "Orders" }).count();
    assert.equal(count, 1003);
  }

  step("admin: data subscription over the TLS TCP port");
  {
    const name = await admin.subscriptions.create({ query: "from Orders where freight > 1000" });
    const worker = admin.subscriptions.getSubscriptionWorker({ subscriptionName: name, maxDocsPerBatch: 50 });
    const seen = new Set();
    const done = new Promise((resolve, reject) => {
      worker.on("batch", (batch, callback) => {
        for (const item of batch.items)
          seen.add(item.id);
        callback();
        if (seen.size >= 99)
          resolve();
      });
      worker.on("error", reject);
    });
    await done;
    await worker.dispose();
    assert.equal(seen.size, 99);
  }

  step("reader: loads and queries work");
  {
    const session = reader.openSession();
    assert.equal((await session.load("orders/1")).freight, 10);
    assert.equal((await session.query({ collection: "Orders" }).whereEquals("company", "companies/1").all()).length > 0, true);
  }

  step("reader: every write is refused with AuthorizationException");
  // The client raises AuthorizationException; its bulk insert wraps the server's answer in BulkInsertAbortedException.
  const refused = (what) => (e) => {
    console.log(`  ${what}: ${e.name}: ${e.message.split("\n").slice(-1)[0].slice(0, 200)}`);
    return e.name === "AuthorizationException"
      || (e.name === "BulkInsertAbortedException" && /Raven\.Client\.Exceptions\.Security\.AuthorizationException/.test(e.message));
  };
  {
    const session = reader.openSession();
    await session.store(new Order("companies/9", 1), "orders/new");
    await assert.rejects(session.saveChanges(), refused("saveChanges"));
  }
  await assert.rejects((async () => {
    const bulk = reader.bulkInsert();
    await bulk.store(new Order("companies/9", 1), "orders/bulk");
    await bulk.finish();
  })(), refused("bulkInsert"));
  {
    const index = new IndexDefinition();
    index.name = "Evil";
    index.maps = new Set(["from o in docs.Orders select new { o.company }"]);
    await assert.rejects(reader.maintenance.send(new PutIndexesOperation(index)), refused("putIndexes"));
  }
  await assert.rejects(reader.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database + "2" })), refused("createDatabase"));
  assert.equal(await admin.openSession().load("orders/new"), null);
  assert.equal(await admin.openSession().load("orders/bulk"), null);
  console.log("secured: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  admin.dispose();
  reader.dispose();
  anonymous.dispose();
}
