using Lucene.Net.Documents;
using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Store;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The n-gram index Lucene's SpellChecker suggests from (Lucene.Net.Suggest, where it lives, is not served: this is
/// the same algorithm on Lucene's core). Each word of at least 3 characters is a document holding its character n-grams
/// (<c>gram{n}</c>), its first (<c>start{n}</c>) and last (<c>end{n}</c>) one, for n in 1–2 (words up to 4 characters),
/// 2–3 (5) or 3–4 (longer). A suggestion query ORs the asked word's grams (start grams boosted 2), takes Lucene's best
/// 10 × page hits, drops the word itself and those less similar than the accuracy, and keeps the page's best by
/// similarity (or popularity) — raising the accuracy to the worst kept once the page is full, as SpellChecker does.
/// Built once per index snapshot and field; thread-safe once built.
/// </summary>
internal sealed class SpellIndex
{
    private const string WordField = "word";
    private const float StartBoost = 2f, EndBoost = 1f;

    private readonly IndexSearcher _searcher;
    private readonly Dictionary<string, int> _frequencies;

    private SpellIndex(IndexSearcher searcher, Dictionary<string, int> frequencies)
    {
        _searcher = searcher;
        _frequencies = frequencies;
    }

    private static readonly System.Runtime.CompilerServices.ConditionalWeakTable<object, System.Collections.Concurrent.ConcurrentDictionary<ushort, Lazy<SpellIndex>>> Built = new();

    /// <summary>The spell index of <paramref name="field"/>'s terms (with their document frequencies) in <paramref name="reader"/>.</summary>
    public static SpellIndex Of(IndexReader reader, IndexField field, Func<IEnumerable<(string Term, int Freq)>> terms) =>
        Built.GetValue(reader.CoreCacheKey, _ => new()).GetOrAdd(field.Id, _ => new Lazy<SpellIndex>(() => Build(terms()))).Value;

    private static SpellIndex Build(IEnumerable<(string Term, int Freq)> terms)
    {
#pragma warning disable CS0618 // RAMDirectory: a small in-memory index per snapshot, dropped with it
        var directory = new RAMDirectory();
#pragma warning restore CS0618
        var frequencies = new Dictionary<string, int>(StringComparer.Ordinal);
        using (var writer = new IndexWriter(directory, new IndexWriterConfig(LuceneVersion.LUCENE_48, null) { OpenMode = OpenMode.CREATE }))
        {
            foreach (var (term, freq) in terms)
            {
                frequencies[term] = frequencies.GetValueOrDefault(term) + freq;
                if (term.Length < 3 || frequencies[term] != freq)
                    continue; // SpellChecker indexes words of 3 characters or more, once each
                writer.AddDocument(Document(term));
            }
        }
        return new SpellIndex(new IndexSearcher(DirectoryReader.Open(directory)), frequencies);
    }

    private static readonly FieldType GramType = new(StringField.TYPE_NOT_STORED) { IndexOptions = IndexOptions.DOCS_AND_FREQS };

    private static Document Document(string word)
    {
        var doc = new Document { new StringField(WordField, word, Field.Store.YES) };
        for (int n = MinGram(word.Length); n <= MaxGram(word.Length); n++)
        {
            var grams = Grams(word, n);
            for (int i = 0; i < grams.Count; i++)
            {
                doc.Add(new Field("gram" + n, grams[i], GramType));
                if (i == 0)
                    doc.Add(new Field("start" + n, grams[i], GramType));
            }
            if (grams.Count > 0)
                doc.Add(new Field("end" + n, grams[^1], GramType));
        }
        return doc;
    }

    private static int MinGram(int length) => length > 5 ? 3 : length == 5 ? 2 : 1;

    private static int MaxGram(int length) => length > 5 ? 4 : length == 5 ? 3 : 2;

    private static List<string> Grams(string word, int n)
    {
        var grams = new List<string>();
        for (int i = 0; i + n <= word.Length; i++)
            grams.Add(word.Substring(i, n));
        return grams;
    }

    /// <summary>One suggestion: the word, its similarity to the asked word, its document frequency.</summary>
    public readonly record struct Candidate(string Word, float Score, int Freq);

    /// <summary>SpellChecker's suggestions for one word, best first.</summary>
    public List<Candidate> Suggest(string word, int pageSize, float accuracy, Func<string, string, float> similarity, bool popularity)
    {
        var query = new BooleanQuery();
        for (int n = MinGram(word.Length); n <= MaxGram(word.Length); n++)
        {
            var grams = Grams(word, n);
            if (grams.Count == 0)
                continue;
            query.Add(new TermQuery(new Term("start" + n, grams[0])) { Boost = StartBoost }, Occur.SHOULD);
            query.Add(new TermQuery(new Term("end" + n, grams[^1])) { Boost = EndBoost }, Occur.SHOULD);
            foreach (string gram in grams)
                query.Add(new TermQuery(new Term("gram" + n, gram)), Occur.SHOULD);
        }
        int maxHits = 10 * pageSize;
        var kept = new List<Candidate>();
        Comparison<Candidate> better = popularity ? ByPopularity : BySimilarity;
        foreach (var hit in query.Clauses.Count == 0 ? [] : _searcher.Search(query, maxHits).ScoreDocs)
        {
            string candidate = _searcher.Doc(hit.Doc).Get(WordField);
            if (candidate == word)
                continue;
            float score = similarity(word, candidate);
            if (score < accuracy)
                continue;
            kept.Add(new Candidate(candidate, score, _frequencies.GetValueOrDefault(candidate)));
            kept.Sort(better);
            if (kept.Count > pageSize)
                kept.RemoveAt(kept.Count - 1);
            if (kept.Count == pageSize)
                accuracy = kept[^1].Score; // the queue is full: what follows must beat its worst
        }
        return kept;
    }

    // SpellChecker's comparators, best first: similarity, then frequency, then the word (ordinal); or frequency first.
    private static int BySimilarity(Candidate a, Candidate b)
    {
        int c = b.Score.CompareTo(a.Score);
        if (c == 0)
            c = b.Freq.CompareTo(a.Freq);
        return c != 0 ? c : string.CompareOrdinal(a.Word, b.Word);
    }

    private static int ByPopularity(Candidate a, Candidate b)
    {
        int c = b.Freq.CompareTo(a.Freq);
        if (c == 0)
            c = b.Score.CompareTo(a.Score);
        return c != 0 ? c : string.CompareOrdinal(a.Word, b.Word);
    }
}
