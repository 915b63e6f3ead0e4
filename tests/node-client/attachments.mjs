// Attachments through RavenDB's official Node client (npm ravendb 7.2.6): session.advanced.attachments.store
// (a multipart bulk_docs batch), get (content, content type, hash, size), exists, getNames from @attachments,
// copy, move, rename and delete in sessions; PutAttachmentOperation / GetAttachmentOperation /
// DeleteAttachmentOperation; a 6 MB attachment (staged in chunks) read back byte for byte; identical content
// stored once (database statistics); attachments in bulk insert; a missing document refused; deleting the
// document deleting its attachments. Usage: node attachments.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, PutAttachmentOperation, GetAttachmentOperation, DeleteAttachmentOperation, GetStatisticsOperation,
} from "ravendb";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("attachments test timed out"); process.exit(3); }, 120_000);
class User { constructor(name) { this.name = name; } }

async function readAll(result) {
  const chunks = [];
  for await (const c of result.data) chunks.push(c);
  return Buffer.concat(chunks);
}

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  const big = randomBytes(6 * 1024 * 1024 + 123);
  {
    const s = store.openSession();
    const ann = new User("Ann");
    await s.store(ann, "users/1");
    s.advanced.attachments.store(ann, "photo.jpg", Buffer.from("jpeg bytes"), "image/jpeg");
    s.advanced.attachments.store("users/1", "big.bin", big, "application/octet-stream");
    await s.saveChanges();
    const meta = s.advanced.getMetadataFor(ann);
    assert.equal(meta["@attachments"].length, 2);
    // the session's change vector is the document's after its attachments (RavenDB numbers them: each attachment an
    // etag, then the document's version)
    const saved = s.advanced.getChangeVectorFor(ann);
    await s.advanced.refresh(ann);
    assert.equal(s.advanced.getChangeVectorFor(ann), saved);
    assert.match(saved, /^A:4-/);
  }
  {
    const s = store.openSession();
    const ann = await s.load("users/1");
    const meta = s.advanced.getMetadataFor(ann);
    assert.match(meta["@flags"], /HasAttachments/);
    const names = s.advanced.attachments.getNames(ann).map(a => a.name).sort();
    assert.deepEqual(names, ["big.bin", "photo.jpg"]);
    assert.equal(await s.advanced.attachments.exists("users/1", "photo.jpg"), true);
    assert.equal(await s.advanced.attachments.exists("users/1", "nope"), false);
    const photo = await s.advanced.attachments.get("users/1", "photo.jpg");
    assert.equal(photo.details.contentType, "image/jpeg");
    assert.equal(photo.details.size, 10);
    assert.equal((await readAll(photo)).toString(), "jpeg bytes");
    const bigResult = await s.advanced.attachments.get(ann, "big.bin");
    assert.equal(bigResult.details.size, big.length);
    const back = await readAll(bigResult);
    assert.equal(createHash("sha256").update(back).digest("hex"), createHash("sha256").update(big).digest("hex"));
    assert.equal(bigResult.details.hash, createHash("sha256").update(big).digest("base64"));
  }
  {
    // copy, rename (move within the document), move to another document, delete — in one session
    const s = store.openSession();
    await s.store(new User("Bob"), "users/2");
    await s.saveChanges();
    s.advanced.attachments.copy("users/1", "photo.jpg", "users/2", "ann-photo.jpg");
    s.advanced.attachments.rename("users/1", "big.bin", "large.bin");
    await s.saveChanges();
    const s2 = store.openSession();
    s2.advanced.attachments.move("users/1", "large.bin", "users/2", "moved.bin");
    s2.advanced.attachments.delete("users/1", "photo.jpg");
    await s2.saveChanges();
    const s3 = store.openSession();
    const bob = await s3.load("users/2");
    assert.deepEqual(s3.advanced.attachments.getNames(bob).map(a => a.name).sort(), ["ann-photo.jpg", "moved.bin"]);
    const ann = await s3.load("users/1");
    assert.equal(s3.advanced.getMetadataFor(ann)["@attachments"], undefined);
    assert.equal((await readAll(await s3.advanced.attachments.get("users/2", "moved.bin"))).length, big.length);
  }
  {
    // operations; identical content is stored once
    const put = await store.operations.send(new PutAttachmentOperation("users/1", "copy-of-big", big, "application/x-test"));
    assert.equal(put.size, big.length);
    assert.equal(put.name, "copy-of-big");
    const stats = await store.maintenance.send(new GetStatisticsOperation());
    assert.equal(stats.countOfAttachments, 3);
    assert.equal(stats.countOfUniqueAttachments, 2);
    const got = await store.operations.send(new GetAttachmentOperation("users/1", "copy-of-big", "Document", null));
    assert.equal(got.details.contentType, "application/x-test");
    assert.equal((await readAll(got)).length, big.length);
    await store.operations.send(new DeleteAttachmentOperation("users/1", "copy-of-big"));
    const none = await store.operations.send(new GetAttachmentOperation("users/1", "copy-of-big", "Document", null));
    assert.equal(none, null);
    await assert.rejects(store.operations.send(new PutAttachmentOperation("users/404", "x", Buffer.from("x"))), e => e.name === "DocumentDoesNotExistException");
  }
  {
    // attachments in bulk insert
    const bulk = store.bulkInsert();
    for (let i = 0; i < 50; i++) {
      await bulk.store(new User("bulk " + i), "bulk/" + i);
      await bulk.attachmentsFor("bulk/" + i).store("file.txt", Buffer.from("content " + i), "text/plain");
    }
    await bulk.finish();
    const s = store.openSession();
    const r = await s.advanced.attachments.get("bulk/42", "file.txt");
    assert.equal((await readAll(r)).toString(), "content 42");
  }
  {
    // deleting a document deletes its attachments (their content once nothing refers to it)
    const s = store.openSession();
    s.delete("users/2");
    await s.saveChanges();
    const stats = await store.maintenance.send(new GetStatisticsOperation());
    assert.equal(stats.countOfAttachments, 50);
  }
  console.log("attachments: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
