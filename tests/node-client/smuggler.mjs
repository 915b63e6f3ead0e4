// Export and import through RavenDB's official Node client (npm ravendb 7.2.6): store.smuggler.export to a file (the
// operation awaited), import of that file into another database (multipart upload), and the documents, attachment,
// counter and index arriving intact. Usage: node smuggler.mjs <url> <database>.
import { DocumentStore, CreateDatabaseOperation, PutIndexesOperation, GetStatisticsOperation } from "ravendb";
import assert from "node:assert/strict";
import { mkdtempSync, statSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("smuggler test timed out"); process.exit(3); }, 120_000);
class Product { constructor(name, price) { this.name = name; this.price = price; } }
const dir = mkdtempSync(join(tmpdir(), "rl-smuggler-"));
const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database + "-copy" }));
  {
    const s = store.openSession();
    for (let i = 1; i <= 50; i++)
      await s.store(new Product("p" + i, i * 1.5), `products/${i}`);
    await s.saveChanges();
    const s2 = store.openSession();
    s2.advanced.attachments.store("products/1", "manual.txt", Buffer.from("read me"), "text/plain");
    s2.countersFor("products/2").increment("Sold", 9);
    await s2.saveChanges();
  }
  await store.maintenance.send(new PutIndexesOperation({ name: "Products/ByPrice", maps: new Set(["from p in docs.Products select new { p.price }"]) }));
  const file = join(dir, "export.ravendbdump");
  const exportOp = await store.smuggler.export({ operateOnTypes: ["Documents", "Indexes", "Attachments", "CounterGroups"] }, file);
  await exportOp.waitForCompletion();
  assert.ok(statSync(file).size > 100);

  const importOp = await store.smuggler.forDatabase(database + "-copy").import({ operateOnTypes: ["Documents", "Indexes", "Attachments", "CounterGroups"] }, file);
  await importOp.waitForCompletion();
  const copy = new DocumentStore(url, database + "-copy");
  copy.initialize();
  try {
    const stats = await copy.maintenance.send(new GetStatisticsOperation());
    assert.equal(stats.countOfDocuments, 50);
    assert.ok(stats.indexes.some(i => i.name === "Products/ByPrice"));
    const s = copy.openSession();
    assert.equal((await s.load("products/7")).price, 10.5);
    const att = await s.advanced.attachments.get("products/1", "manual.txt");
    const chunks = [];
    for await (const c of att.data) chunks.push(c);
    assert.equal(Buffer.concat(chunks).toString(), "read me");
    att.dispose();
    assert.equal(await s.countersFor("products/2").get("Sold"), 9);
  } finally {
    copy.dispose();
  }
  console.log("smuggler: ok (50 documents, an attachment, a counter and an index exported and imported)");
} finally {
  store.dispose();
  rmSync(dir, { recursive: true, force: true });
  clearTimeout(timeout);
}
