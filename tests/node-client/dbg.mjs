import { DocumentStore, CreateDatabaseOperation } from "ravendb";
const [url, db, n] = process.argv.slice(2);
const store = new DocumentStore(url, db); store.initialize();
await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: db }));
class User { constructor(n){this.name=n; this.pad = "p".repeat(1000);} }
const bulk = store.bulkInsert();
const t0 = Date.now();
try { for (let i = 0; i < Number(n); i++) await bulk.store(new User("x" + i), i === 100 ? "bad/" + "x".repeat(600) : `bad/${i}`); await bulk.finish(); console.log("no error"); }
catch (e) { console.log(e.name, e.message.slice(0, 300)); }
console.log(Date.now() - t0, "ms");
process.exit(0);
