// Custom analyzers and sorters through RavenDB's official Node client (npm ravendb 7.2.x): PutAnalyzersOperation and
// PutServerWideAnalyzersOperation (Lucene.Net 4.8 analyzer code), an index field naming one, PutSortersOperation and
// PutServerWideSortersOperation with query.orderBy(field, { sorterName }), and the delete operations.
// Usage: node analysis.mjs <url> <database>.
import {
  DocumentStore, CreateDatabaseOperation, PutAnalyzersOperation, PutServerWideAnalyzersOperation, DeleteAnalyzerOperation,
  DeleteServerWideAnalyzerOperation, PutSortersOperation, PutServerWideSortersOperation, DeleteSorterOperation, DeleteServerWideSorterOperation,
  AbstractJavaScriptIndexCreationTask,
} from "ravendb";
import assert from "node:assert/strict";

const [url, database] = process.argv.slice(2);
const timeout = setTimeout(() => { console.error("analysis test timed out"); process.exit(3); }, 120_000);
class User { constructor(name) { this.name = name; } }

// Keeps the first two letters of each word: "hello" and "help" are the same term.
const prefixAnalyzer = `
using System.IO;
using Lucene.Net.Analysis;
using Lucene.Net.Analysis.Core;
using Lucene.Net.Analysis.Miscellaneous;
using Lucene.Net.Util;
public class TwoLetters : Analyzer {
  protected override TokenStreamComponents CreateComponents(string fieldName, TextReader reader) {
    var source = new WhitespaceTokenizer(LuceneVersion.LUCENE_48, reader);
    return new TokenStreamComponents(source, new TruncateTokenFilter(new LowerCaseFilter(LuceneVersion.LUCENE_48, source), 2));
  }
}`;
const byLength = `
public class ByLength : RavenLite.Server.Indexing.Analysis.CustomSorter {
  public override int Compare(string x, string y) => x.Length != y.Length ? x.Length.CompareTo(y.Length) : string.CompareOrdinal(x, y);
}`;

class UsersByName extends AbstractJavaScriptIndexCreationTask {
  constructor(analyzer) {
    super();
    this.map(User, u => ({ name: u.name }));
    this.index("name", "Search");
    this.analyze("name", analyzer);
  }
}

const store = new DocumentStore(url, database);
store.initialize();
try {
  await store.maintenance.server.send(new CreateDatabaseOperation({ databaseName: database }));
  {
    const s = store.openSession();
    for (const name of ["hello", "help", "world", "ab"]) await s.store(new User(name));
    await s.saveChanges();
  }
  await store.maintenance.send(new PutAnalyzersOperation({ name: "TwoLetters", code: prefixAnalyzer }));
  const index = new UsersByName("TwoLetters");
  await index.execute(store);
  {
    const s = store.openSession();
    const found = await s.query({ indexName: index.getIndexName(), documentType: User }).waitForNonStaleResults().search("name", "heap").orderBy("name").all();
    assert.deepEqual(found.map(u => u.name), ["hello", "help"]);
  }
  await store.maintenance.send(new DeleteAnalyzerOperation("TwoLetters"));
  await store.maintenance.server.send(new PutServerWideAnalyzersOperation({ name: "TwoLettersEverywhere", code: prefixAnalyzer.replace("class TwoLetters", "class TwoLettersEverywhere") }));
  const serverWide = new UsersByName("TwoLettersEverywhere");
  serverWide.getIndexName = () => "Users/ByNameServerWide";
  await serverWide.execute(store);
  {
    const s = store.openSession();
    const found = await s.query({ indexName: "Users/ByNameServerWide", documentType: User }).waitForNonStaleResults().search("name", "wo").all();
    assert.deepEqual(found.map(u => u.name), ["world"]);
  }
  await store.maintenance.server.send(new DeleteServerWideAnalyzerOperation("TwoLettersEverywhere"));

  await store.maintenance.send(new PutSortersOperation({ name: "ByLength", code: byLength }));
  {
    const s = store.openSession();
    const sorted = await s.query(User).orderBy("name", { sorterName: "ByLength" }).all();
    assert.deepEqual(sorted.map(u => u.name), ["ab", "help", "hello", "world"]);
    const reversed = await s.query(User).orderByDescending("name", { sorterName: "ByLength" }).all();
    assert.deepEqual(reversed.map(u => u.name), ["world", "hello", "help", "ab"]);
  }
  await store.maintenance.send(new DeleteSorterOperation("ByLength"));
  await store.maintenance.server.send(new PutServerWideSortersOperation({ name: "ByLengthEverywhere", code: byLength.replace("class ByLength", "class ByLengthEverywhere") }));
  {
    const s = store.openSession();
    const sorted = await s.query(User).orderBy("name", { sorterName: "ByLengthEverywhere" }).all();
    assert.deepEqual(sorted.map(u => u.name), ["ab", "help", "hello", "world"]);
  }
  await store.maintenance.server.send(new DeleteServerWideSorterOperation("ByLengthEverywhere"));
  await assert.rejects(store.openSession().query(User).orderBy("name", { sorterName: "ByLengthEverywhere" }).all(), /There is no sorter/);
  console.log("analysis: ok");
} catch (e) {
  console.error(e);
  process.exitCode = 1;
} finally {
  clearTimeout(timeout);
  store.dispose();
}
