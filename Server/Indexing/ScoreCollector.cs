using Lucene.Net.Index;
using Lucene.Net.Search;

namespace RavenLite.Server.Indexing;

/// <summary>Collects every hit of a query with its score (document numbers of the whole reader). One search, one thread.</summary>
internal sealed class ScoreCollector(Dictionary<long, float> hits) : ICollector
{
    private Scorer? _scorer;
    private int _docBase;

    public bool AcceptsDocsOutOfOrder => true;

    public void SetScorer(Scorer scorer) => _scorer = scorer;

    public void SetNextReader(AtomicReaderContext context) => _docBase = context.DocBase;

    public void Collect(int doc) => hits[_docBase + doc] = _scorer!.GetScore();
}
