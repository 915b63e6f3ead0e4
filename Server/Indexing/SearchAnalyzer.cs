using Lucene.Net.Analysis;
using Lucene.Net.Analysis.Core;
using Lucene.Net.Analysis.Util;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The analyzer of <c>Indexing: Search</c> fields and of the text inside <c>search()</c>: runs of letters
/// and digits, lower-cased (the same words <see cref="Queries.JsonPaths.Analyze"/> yields), no stop words.
/// Thread-safe (Lucene analyzers keep per-thread token streams).
/// </summary>
internal sealed class SearchAnalyzer : Analyzer
{
    /// <summary>The one instance.</summary>
    public static readonly SearchAnalyzer Instance = new();

    protected override TokenStreamComponents CreateComponents(string fieldName, System.IO.TextReader reader)
    {
        var tokenizer = new LetterOrDigitTokenizer(reader);
        return new TokenStreamComponents(tokenizer, new LowerCaseFilter(LuceneVersion.LUCENE_48, tokenizer));
    }

    private sealed class LetterOrDigitTokenizer(System.IO.TextReader input) : CharTokenizer(LuceneVersion.LUCENE_48, input)
    {
        protected override bool IsTokenChar(int c) => c <= char.MaxValue ? char.IsLetterOrDigit((char)c) : char.IsLetterOrDigit(char.ConvertFromUtf32(c), 0);
    }
}
