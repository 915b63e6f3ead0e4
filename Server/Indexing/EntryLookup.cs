using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Whether a committed index snapshot holds an entry for a document id: one terms enumerator per
/// segment, kept for the whole batch (a composite reader's DocFreq builds one per call). Lets the worker
/// add a document the index has never seen without a delete-by-id. Not thread-safe.
/// </summary>
internal sealed class EntryLookup(IndexReader reader)
{
    private readonly (TermsEnum Terms, IBits? Live)[] _segments = Segments(reader);

    private readonly BytesRef _key = new();

    private static (TermsEnum Terms, IBits? Live)[] Segments(IndexReader reader)
    {
        var list = new List<(TermsEnum, IBits?)>();
        foreach (var leaf in reader.Leaves)
            if (leaf.AtomicReader.GetTerms(Index.IdField) is { } terms)
                list.Add((terms.GetEnumerator(), leaf.AtomicReader.LiveDocs));
        return [.. list];
    }
    private DocsEnum? _docs;

    /// <summary>True when a live entry has the lower-cased id <paramref name="lowerId"/> (UTF-8).</summary>
    public bool Has(ReadOnlySpan<byte> lowerId)
    {
        if (_segments.Length == 0)
            return false;
        _key.Bytes = lowerId.ToArray();
        _key.Offset = 0;
        _key.Length = lowerId.Length;
        foreach (var (terms, live) in _segments)
        {
            if (!terms.SeekExact(_key))
                continue;
            if (live == null)
                return true;
            _docs = terms.Docs(live, _docs, DocsFlags.NONE);
            if (_docs.NextDoc() != DocIdSetIterator.NO_MORE_DOCS)
                return true;
        }
        return false;
    }
}
