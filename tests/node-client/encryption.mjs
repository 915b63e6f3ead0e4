// RavenDB's official Node client (npm ravendb 7.2.6) creating and using an encrypted database on a secured RavenLite,
// as against RavenDB: a key from /admin/secrets/generate, distributed to the node (/admin/secrets/distribute, the
// Studio's requests), then CreateDatabaseOperation with encrypted: true; the record says Encrypted; a session stores,
// loads and queries; a static index answers.
// Usage: node encryption.mjs <https-url> <database> <cert-dir holding ca.pem and admin.pfx>.
import { DocumentStore, CreateDatabaseOperation, GetDatabaseRecordOperation, PutIndexesOperation, IndexDefinition } from "ravendb";
import assert from "node:assert/strict";
import https from "node:https";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const [url, database, certDir] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("encryption test timed out"); process.exit(3); }, 120_000);
const ca = readFileSync(join(certDir, "ca.pem"));
const pfx = readFileSync(join(certDir, "admin.pfx"));
const call = (method, path, body) => new Promise((resolve, reject) => {
  const request = https.request(new URL(path, url), { method, pfx, ca, headers: body ? { "Content-Type": "text/plain" } : {} }, (response) => {
    let text = "";
    response.on("data", (c) => text += c);
    response.on("end", () => response.statusCode < 300 ? resolve(text) : reject(new Error(`${method} ${path}: ${response.statusCode} ${text}`)));
  });
  request.on("error", reject);
  if (body)
    request.write(body);
  request.end();
});
const store = new DocumentStore(url, database, { certificate: pfx, type: "pfx", ca });
store.initialize();
try {
  const key = (await call("GET", "/admin/secrets/generate")).trim();
  assert.equal(Buffer.from(key, "base64").length, 32);
  await assert.rejects(store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database, encrypted: true })), /holds no key/);
  await call("POST", `/admin/secrets/distribute?name=${encodeURIComponent(database)}&node=A`, key);
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database, encrypted: true }));
  const record = await store.maintenance.server.send(new GetDatabaseRecordOperation(database));
  assert.equal(record.encrypted, true);
  {
    const session = store.openSession();
    for (let i = 0; i < 20; i++)
      await session.store({ name: `secret-${i}`, amount: i, "@metadata": { "@collection": "Accounts" } }, `accounts/${i}`);
    await session.saveChanges();
  }
  const index = new IndexDefinition();
  index.name = "Accounts/ByAmount";
  index.maps = new Set(["from a in docs.Accounts select new { a.amount }"]);
  await store.maintenance.send(new PutIndexesOperation(index));
  {
    const session = store.openSession();
    const loaded = await session.load("accounts/7");
    assert.equal(loaded.name, "secret-7");
    const rich = await session.query({ indexName: "Accounts/ByAmount" }).waitForNonStaleResults().whereGreaterThan("amount", 14).all();
    assert.equal(rich.length, 5);
  }
  console.log("encryption: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
