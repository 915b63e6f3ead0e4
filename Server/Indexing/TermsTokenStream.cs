using Lucene.Net.Analysis;
using Lucene.Net.Analysis.TokenAttributes;

namespace RavenLite.Server.Indexing;

/// <summary>
/// A token stream over terms already computed (<see cref="IndexKeys.TermsOf"/>): one token each, as is.
/// Lets one Lucene field carry every term of an entry without an analyzer. Single use, one thread.
/// </summary>
internal sealed class TermsTokenStream : TokenStream
{
    private readonly IReadOnlyList<string> _terms;
    private readonly ICharTermAttribute _term;
    private int _next;

    public TermsTokenStream(IReadOnlyList<string> terms)
    {
        _terms = terms;
        _term = AddAttribute<ICharTermAttribute>();
    }

    public override bool IncrementToken()
    {
        if (_next >= _terms.Count)
            return false;
        ClearAttributes();
        _term.SetEmpty().Append(_terms[_next++]);
        return true;
    }

    public override void Reset()
    {
        base.Reset();
        _next = 0;
    }
}
