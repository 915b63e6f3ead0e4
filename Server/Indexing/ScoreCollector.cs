using Lucene.Net.Index;
using Lucene.Net.Search;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Collects every hit of a query (document numbers of the whole reader) into <see cref="SearchHits"/>, in
/// document order (segments in order, in-order scorers), with its score when <paramref name="withScores"/>
/// (computing a score reads the field's norms: a tenth of a full-text query's time when only a page needs
/// them). One search, one thread.
/// </summary>
internal sealed class ScoreCollector(SearchHits hits, bool withScores = true) : ICollector
{
    private Scorer? _scorer;
    private int _docBase;

    public bool AcceptsDocsOutOfOrder => false;

    public void SetScorer(Scorer scorer) => _scorer = scorer;

    public void SetNextReader(AtomicReaderContext context) => _docBase = context.DocBase;

    public void Collect(int doc) => hits.Add(_docBase + doc, withScores ? _scorer!.GetScore() : float.NaN);
}

/// <summary>
/// The hits of one Lucene query: ascending document numbers with their scores (a parallel list when collected with
/// them, else a small map of those asked for), looked up by binary search; cheaper than a dictionary for the thousands of hits a query may have, of which a page reads
/// a few. Hits collected without scores get theirs on first request from a scorer of the query positioned on
/// the document (<see cref="ScoreLater"/>). Not thread-safe.
/// </summary>
internal sealed class SearchHits(int keep = int.MaxValue)
{
    private readonly List<long> _docs = [];
    private long _total, _last = -1;
    private List<float>? _scores; // collected with the hits (null: none collected)
    private Dictionary<long, float>? _later; // computed on request
    private Weight? _weight;
    private IndexReader? _reader;
    private Scorer?[]? _scorers;

    /// <summary>The hits kept (the first <c>keep</c>), in ascending document order (the list itself: callers do not change it).</summary>
    public List<long> Docs => _docs;

    /// <summary>Every hit, kept or not.</summary>
    public long Total => _total;

    /// <summary>Whether it keeps only the first hits (and counts the rest).</summary>
    public bool Keeps => keep < int.MaxValue;

    /// <summary>Whether it has kept all the hits it keeps: any more are only counted.</summary>
    public bool Full => _docs.Count >= keep;

    /// <summary>Counts <paramref name="more"/> hits past the ones kept (after <see cref="Full"/>).</summary>
    public void Count(long more)
    {
        if (!Full)
            throw new InvalidOperationException("hits counted before the kept ones are all in");
        _total += more;
    }

    /// <summary>Whether hits were counted but not kept.</summary>
    public bool Truncated => _total > _docs.Count;

    /// <summary>Adds a hit (its score, or NaN for "later"); documents must come in ascending order.</summary>
    public void Add(long doc, float score)
    {
        if (_last >= doc)
            throw new InvalidOperationException($"hits out of order: {doc} after {_last}");
        _last = doc;
        _total++;
        if (_docs.Count >= keep)
            return;
        if (!float.IsNaN(score))
        {
            _scores ??= new List<float>(_docs.Capacity);
            while (_scores.Count < _docs.Count)
                _scores.Add(float.NaN);
            _scores.Add(score);
        }
        _docs.Add(doc);
    }

    /// <summary>Scores not collected are computed on request with the search's <paramref name="weight"/> over <paramref name="reader"/> (which must stay open meanwhile).</summary>
    public void ScoreLater(IndexReader reader, Weight weight)
    {
        _weight = weight;
        _reader = reader;
        _scorers = new Scorer?[reader.Leaves.Count];
    }

    public bool ContainsKey(long doc) => IndexOf(doc) >= 0;

    public bool TryGetValue(long doc, out float score)
    {
        int at = IndexOf(doc);
        if (at < 0)
        {
            score = 0;
            return false;
        }
        if (_scores != null && at < _scores.Count && !float.IsNaN(_scores[at]))
        {
            score = _scores[at];
            return true;
        }
        _later ??= [];
        if (!_later.TryGetValue(doc, out score))
            _later[doc] = score = ScoreOf((int)doc);
        return true;
    }

    /// <summary>Where <paramref name="doc"/> is among the kept hits (negative: not a hit); throws past the last kept when more were only counted.</summary>
    private int IndexOf(long doc)
    {
        if (Truncated && (_docs.Count == 0 || doc > _docs[^1]))
            throw new InvalidOperationException($"hit {doc} lies past the {_docs.Count} hits kept");
        return _docs.BinarySearch(doc);
    }

    /// <summary>The query's score of a hit: the segment's scorer advanced to it (a new scorer when it has gone past).</summary>
    private float ScoreOf(int doc)
    {
        var leaves = _reader!.Leaves;
        int i = ReaderUtil.SubIndex(doc, leaves);
        var leaf = leaves[i];
        int local = doc - leaf.DocBase;
        var scorer = _scorers![i];
        if (scorer == null || scorer.DocID > local)
            _scorers[i] = scorer = _weight!.GetScorer(leaf, leaf.AtomicReader.LiveDocs);
        if (scorer == null)
            return 0;
        int at = scorer.DocID < local ? scorer.Advance(local) : scorer.DocID;
        return at == local ? scorer.GetScore() : 0;
    }
}
