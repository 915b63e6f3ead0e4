using Lucene.Net.Index;
using Lucene.Net.Search;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Collects every hit of a query with its score (document numbers of the whole reader) into
/// <see cref="SearchHits"/>, in document order (segments in order, in-order scorers). One search, one thread.
/// </summary>
internal sealed class ScoreCollector(SearchHits hits) : ICollector
{
    private Scorer? _scorer;
    private int _docBase;

    public bool AcceptsDocsOutOfOrder => false;

    public void SetScorer(Scorer scorer) => _scorer = scorer;

    public void SetNextReader(AtomicReaderContext context) => _docBase = context.DocBase;

    public void Collect(int doc) => hits.Add(_docBase + doc, _scorer!.GetScore());
}

/// <summary>
/// The hits of one Lucene query: ascending document numbers with their scores (parallel lists), looked up by
/// binary search; cheaper than a dictionary for the thousands of hits a query may have, of which a page reads
/// a few. Not thread-safe.
/// </summary>
internal sealed class SearchHits
{
    private readonly List<long> _docs = [];
    private readonly List<float> _scores = [];

    /// <summary>Hits, in ascending document order.</summary>
    public IReadOnlyList<long> Docs => _docs;

    public int Count => _docs.Count;

    /// <summary>Adds a hit; documents must come in ascending order.</summary>
    public void Add(long doc, float score)
    {
        if (_docs.Count > 0 && _docs[^1] >= doc)
            throw new InvalidOperationException($"hits out of order: {doc} after {_docs[^1]}");
        _docs.Add(doc);
        _scores.Add(score);
    }

    public bool ContainsKey(long doc) => _docs.BinarySearch(doc) >= 0;

    public bool TryGetValue(long doc, out float score)
    {
        int at = _docs.BinarySearch(doc);
        score = at >= 0 ? _scores[at] : 0;
        return at >= 0;
    }
}
