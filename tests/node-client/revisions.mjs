// Revisions through RavenDB's official Node client (npm ravendb 7.2.6): ConfigureRevisionsOperation (default and
// per-collection, minimum revisions to keep, purge on delete), a revision per change with HasRevisions/Revision flags,
// session.advanced.revisions getFor (paged, newest first), getMetadataFor, get by change vector(s) and before a date,
// getCountFor; forceRevisionCreationFor on a collection without revisions; the deleted-document revision bin
// (GetRevisionsBinEntryCommand); statistics; attachments of revisions (getRevision). Usage: node revisions.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, ConfigureRevisionsOperation, RevisionsConfiguration, RevisionsCollectionConfiguration,
  GetStatisticsOperation, GetRevisionsBinEntryCommand,
} from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("revisions test timed out"); process.exit(3); }, 120_000);
class User { constructor(name) { this.name = name; } }
class Company { constructor(name) { this.name = name; } }
const sleep = ms => new Promise(r => setTimeout(r, ms));

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const config = new RevisionsConfiguration();
  const def = new RevisionsCollectionConfiguration();
  def.disabled = false;
  def.minimumRevisionsToKeep = 3;
  config.defaultConfig = def;
  const companies = new RevisionsCollectionConfiguration();
  companies.disabled = true;
  const purged = new RevisionsCollectionConfiguration();
  purged.disabled = false;
  purged.purgeOnDelete = true;
  config.collections = new Map([["Companies", companies], ["Temps", purged]]);
  const configured = await store.maintenance.send(new ConfigureRevisionsOperation(config));
  assert.ok(configured.raftCommandIndex > 0);

  let midway;
  for (let i = 1; i <= 5; i++) {
    const s = store.openSession();
    const u = i === 1 ? new User("v1") : await s.load("users/1");
    u.name = "v" + i;
    if (i === 1) await s.store(u, "users/1");
    await s.saveChanges();
    if (i === 3) { await sleep(20); midway = new Date(); await sleep(20); }
  }
  {
    const s = store.openSession();
    const user = await s.load("users/1");
    assert.match(s.advanced.getMetadataFor(user)["@flags"], /HasRevisions/);
    const revisions = await s.advanced.revisions.getFor("users/1");
    assert.deepEqual(revisions.map(r => r.name), ["v5", "v4", "v3"]); // newest first, three kept
    const page = await s.advanced.revisions.getFor("users/1", { start: 1, pageSize: 1 });
    assert.deepEqual(page.map(r => r.name), ["v4"]);
    const metadata = await s.advanced.revisions.getMetadataFor("users/1");
    assert.equal(metadata.length, 3);
    assert.match(metadata[0]["@flags"], /Revision/);
    assert.equal(await s.advanced.revisions.getCountFor("users/1"), 3);
    const cv = metadata[1]["@change-vector"];
    const byCv = await s.advanced.revisions.get(cv);
    assert.equal(byCv.name, "v4");
    const many = await s.advanced.revisions.get([metadata[0]["@change-vector"], cv]);
    assert.equal(many[cv].name, "v4");
    const before = await s.advanced.revisions.get("users/1", midway);
    assert.equal(before.name, "v3");
  }
  {
    // a collection without revisions: none made, until forced
    const s = store.openSession();
    await s.store(new Company("Acme"), "companies/1");
    await s.saveChanges();
    assert.equal(await s.advanced.revisions.getCountFor("companies/1"), 0);
    const acme = await s.load("companies/1");
    s.advanced.revisions.forceRevisionCreationFor(acme);
    await s.saveChanges();
    assert.equal(await store.openSession().advanced.revisions.getCountFor("companies/1"), 1);
    acme.name = "Acme 2"; // the session took the new change vector: this save is not a conflict
    await s.saveChanges();
    assert.equal(await store.openSession().advanced.revisions.getCountFor("companies/1"), 1);
  }
  {
    // deleted documents: a deletion revision and the bin; purge on delete for Temps
    const s = store.openSession();
    await s.store(new User("gone"), "users/2");
    await s.store({ name: "temp", "@metadata": { "@collection": "Temps" } }, "temps/1");
    await s.saveChanges();
    s.delete("users/2");
    s.delete("temps/1");
    await s.saveChanges();
    const s2 = store.openSession();
    assert.equal(await s2.advanced.revisions.getCountFor("users/2"), 2);
    assert.equal(await s2.advanced.revisions.getCountFor("temps/1"), 0);
    const bin = new GetRevisionsBinEntryCommand(store.conventions, 0, 10);
    await store.getRequestExecutor().execute(bin);
    assert.deepEqual(bin.result.results.map(r => r["@metadata"]["@id"]), ["users/2"]);
    const stats = await store.maintenance.send(new GetStatisticsOperation());
    assert.equal(stats.countOfRevisionDocuments, 3 + 1 + 2);
  }
  {
    // attachments of revisions: a revision keeps the attachments it listed, readable after the document dropped them
    const s = store.openSession();
    await s.store(new User("with file"), "users/3");
    s.advanced.attachments.store("users/3", "v1.txt", Buffer.from("first version"), "text/plain");
    await s.saveChanges();
    const meta = await store.openSession().advanced.revisions.getMetadataFor("users/3");
    const withFile = meta.find(m => (m["@attachments"] || []).length === 1);
    assert.ok(withFile);
    const s2 = store.openSession();
    s2.advanced.attachments.delete("users/3", "v1.txt");
    await s2.saveChanges();
    assert.equal(await store.openSession().advanced.attachments.exists("users/3", "v1.txt"), false);
    const old = await store.openSession().advanced.attachments.getRevision("users/3", "v1.txt", withFile["@change-vector"]);
    const chunks = [];
    for await (const c of old.data) chunks.push(c);
    assert.equal(Buffer.concat(chunks).toString(), "first version");
  }
  console.log("revisions: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
