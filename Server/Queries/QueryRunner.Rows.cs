using RavenLite.Server.Documents;
using RavenLite.Server.Indexing;

namespace RavenLite.Server.Queries;

/// <summary>The candidate rows of a query: a collection scan, or the entries an index snapshot yields for the condition.</summary>
public sealed partial class QueryRunner
{
    /// <summary>Every document of the source collection, in etag order.</summary>
    private IEnumerable<Row> ScanRows(Storage.Transactions.Transaction dbTx)
    {
        if (HasMoreLikeThis)
            throw new InvalidQueryException("moreLikeThis() reads an index's terms: query a static index (from index 'Name').");
        foreach (var doc in _db.Documents.Scan(dbTx, _query.Source.AllDocs ? null : _query.Source.Collection))
            yield return Row.ForDocument(doc);
    }

    /// <summary>A reduce result as a query answers it: its properties and an empty <c>@metadata</c> (no id: it is no document).</summary>
    private static byte[] ReduceResultJson(ReadOnlySpan<byte> result)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(result.Length + 16);
        using (var w = new Utf8JsonWriter(buffer))
        {
            using var parsed = JsonDocument.Parse(result.ToArray());
            w.WriteStartObject();
            foreach (var p in parsed.RootElement.EnumerateObject())
                p.WriteTo(w);
            w.WriteStartObject("@metadata");
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>The index's candidate entries (index order) whose documents still exist in the snapshot.</summary>
    private IEnumerable<Row> IndexRows(Indexing.Index index, Storage.Transactions.Transaction dbTx, out bool stale)
    {
        var snapshot = index.AcquireSnapshot();
        try
        {
            long since = Stopwatch.GetTimestamp();
            var target = index.TargetOf(dbTx);
            stale = _stale = Indexing.Index.IsBehind(snapshot.Position, target);
            // The index may also be ahead of this query's database snapshot (it indexed writes committed after the
            // snapshot began): then an entry can hold a newer value than the document the query reads.
            _inStep = !_stale && !Indexing.Index.IsBehind(target, snapshot.Position) && _query.Filter == null; // a filter's answers are known only by reading documents
            _timings?.Add("Staleness", since);
        }
        catch
        {
            Indexing.Index.ReleaseSnapshot(snapshot);
            throw;
        }
        return Rows(index, snapshot, dbTx);
    }

    // Kept whole: the index's matching entries as one lazy sequence (an iterator) choosing between its paths
    // (presorted from doc values, search hits, candidates), the snapshot held for the sequence's life.
    private IEnumerable<Row> Rows(Indexing.Index index, Indexing.IndexSnapshot snapshot, Storage.Transactions.Transaction dbTx)
    {
        try
        {
            var reader = snapshot.Reader;
            var docs = DocumentsStorage.Docs(dbTx);
            // Every hit's score is needed to order by it (score(), or moreLikeThis() without order by); else only the page's.
            bool allScores = _query.OrderBy.Any(o => o.Type == RqlOrderType.Score) || (_query.OrderBy.Count == 0 && HasMoreLikeThis);
            var finder = new CandidateFinder(index.Compiled, reader, Resolve, MoreLikeThisQueries(index.Compiled, reader, dbTx), sp => ShapeOf(sp.Shape, sp.Target), allScores);
            _searchHits = finder.SearchHits;
            var entries = new EntryReader(reader);
            long since = Stopwatch.GetTimestamp();
            // A number range ordered by its own field, from an index in step with the snapshot: the page straight from the terms.
            var ranged = _inStep && !_query.Distinct && _facets == null ? TopByNumberTerms(index.Compiled, reader) : null;
            // An exact answer with no order (and no facets, distinct or scores for all) is counted and read a page at a time: a lone
            // search() keeps only the hits up to the page's end.
            bool unorderedPage = _inStep && _query.OrderBy.Count == 0 && !_query.Distinct && _facets == null;
            var candidates = ranged == null ? finder.Find(_query.Where, unorderedPage && !allScores ? (int)Math.Min((long)_skip + _take, int.MaxValue) : int.MaxValue) : null;
            _timings?.Add("Lucene", since);
            if (_query.Explanations != null && finder.LuceneQueries.Count > 0)
            {
                // explanations(): Lucene's account of each answered entry's score under the query's search()/moreLikeThis().
                var explain = new Lucene.Net.Search.BooleanQuery();
                foreach (var q in finder.LuceneQueries)
                    explain.Add(q, Lucene.Net.Search.Occur.SHOULD);
                _explainQuery = explain;
            }
            if (finder.LuceneQueries.Count > 0 && _heldReader == null)
            {
                // The page's scores (and explanations) are computed after the rows are read: keep the reader open till then.
                reader.IncRef();
                _heldReader = reader;
            }
            IEnumerable<long> ids = candidates ?? AllEntryIds(reader);
            if (ranged is { } page)
            {
                (_exactTotal, _presorted) = (page.Total, true);
                ids = page.Page;
            }
            else if (candidates != null && finder.Exact && unorderedPage)
            {
                // Exact candidates from an index in step with the snapshot: they are the matches, in order;
                // count them and read only the page.
                _exactTotal = finder.Total;
                ids = candidates.Skip(_skip).Take(_take);
            }
            else if (candidates != null && candidates.Count < finder.Total)
            {
                throw new InvalidOperationException("The query kept only a page of its candidates but does not answer a page of them.");
            }
            else if (_facetCounts != null && (candidates == null ? _query.Where == null : finder.Exact) && _inStep && _query.Include.Count == 0
                && _facetCounts.TryAddFromIndex(reader, index.Compiled, MatchSet(reader, candidates), Resolve))
            {
                // Exact matches of an index in step with the snapshot: the facets were counted from its terms and doc values.
                _exactTotal = candidates?.Count ?? reader.NumDocs;
                yield break;
            }
            else if ((candidates == null ? _query.Where == null : finder.Exact) && _inStep && !_query.Distinct && _facets == null
                && TopByDocValues(index.Compiled, reader, candidates) is { } top)
            {
                // Exact matches (or every entry) of an index in step with the snapshot, ordered by numeric sort doc values:
                // only the page's entries are read, already in order.
                (_exactTotal, _presorted) = (top.Total, true);
                ids = top.Page;
            }
            if (index.Compiled.StoresAnswers)
            {
                // Reduce results, and the outputs of counters and time-series maps, are the answers themselves (no documents behind them).
                foreach (long entryId in ids)
                {
                    var (lowerId, _, indexed) = entries.Read((int)entryId);
                    var result = reader.Document((int)entryId).GetBinaryValue(Indexing.Index.ReduceResultField);
                    var answer = new StoredDocument("", Documents.Collections.Empty, 0, "", index.LastIndexingTime ?? DateTime.UtcNow, ReduceResultJson(result.Bytes.AsSpan(result.Offset, result.Length)));
                    yield return Row.ForEntry(indexed, lowerId, answer, changed: false, docs, entryId);
                }
                yield break;
            }
            foreach (long entryId in ids)
            {
                var (lowerId, entryEtag, indexed) = entries.Read((int)entryId);
                if (!docs.TryGet(lowerId, out var record))
                    continue; // deleted after it was indexed
                long docEtag = DocumentRecord.Etag(record);
                if (docEtag == entryEtag)
                {
                    // Rows of a page already chosen are all answered: read the document now, not looked up again later.
                    var answered = _exactTotal != null ? DocumentRecord.Read(record, _db.Documents) : null;
                    yield return Row.ForEntry(indexed, lowerId, answered, changed: false, docs, entryId);
                    continue;
                }
                // Changed after it was indexed: check the current version, mapped the same way.
                var current = DocumentRecord.Read(record, _db.Documents);
                byte[]? entry;
                using (var parsed = JsonDocument.Parse(current.Json))
                    entry = index.Compiled.EntryOrNone(parsed.RootElement, current.Collection, current.Id, Indexing.DocumentLoaders.From(_db.Documents, dbTx));
                if (entry == null)
                    continue; // it no longer has an entry
                yield return Row.ForEntry(entry, lowerId, current, changed: true, docs, entryId);
            }
        }
        finally
        {
            Indexing.Index.ReleaseSnapshot(snapshot);
        }
    }

    /// <summary>The candidates as a set of document numbers (null: every live entry).</summary>
    private static Lucene.Net.Util.FixedBitSet? MatchSet(Lucene.Net.Index.IndexReader reader, List<long>? candidates)
    {
        if (candidates == null)
            return null;
        var set = new Lucene.Net.Util.FixedBitSet(Math.Max(1, reader.MaxDoc));
        foreach (long c in candidates)
            set.Set((int)c);
        return set;
    }

    private static IEnumerable<long> AllEntryIds(Lucene.Net.Index.IndexReader reader)
    {
        var live = Lucene.Net.Index.MultiFields.GetLiveDocs(reader);
        for (int doc = 0; doc < reader.MaxDoc; doc++)
            if (live == null || live.Get(doc))
                yield return doc;
    }
}
