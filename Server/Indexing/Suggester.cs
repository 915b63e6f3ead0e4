using Lucene.Net.Index;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// <c>suggest(field, term)</c>: the terms an index holds for a field that are most like the given word, as RavenDB's
/// suggestions from Lucene's SpellChecker (<see cref="SpellIndex"/>: its n-gram candidates, then its similarity, accuracy
/// and ordering). The words are the field's index terms — a Search field's analyzed words, else its whole lower-cased
/// values — with their document frequencies. Several asked words give the best of all their suggestions. Similarities,
/// 1 = equal, as Lucene's StringDistance implementations compute them:
/// <list type="bullet">
/// <item>Levenshtein (default): 1 − edit distance / length of the longer word.</item>
/// <item>JaroWinkler: Jaro similarity; at 0.7 or more, raised by min(0.1, 1 / longer length) × the common prefix × (1 − Jaro).</item>
/// <item>NGram: Kondrak's bigram edit distance (a first character padded), 1 − distance / longer length.</item>
/// </list>
/// Thread-safe (the spell index of a snapshot is built once).
/// </summary>
internal static class Suggester
{
    /// <summary>Suggestions for <paramref name="words"/> from <paramref name="field"/>'s terms in <paramref name="reader"/>.</summary>
    public static List<string> Suggest(IndexReader reader, IndexField field, IReadOnlyList<string> words, SuggestOptions options)
    {
        var spell = SpellIndex.Of(reader, field, () => Terms(reader, field));
        var all = new Dictionary<string, SpellIndex.Candidate>(StringComparer.Ordinal);
        foreach (string word in words.Select(w => w.ToLowerInvariant()))
            foreach (var c in spell.Suggest(word, options.PageSize, options.Accuracy, (a, b) => Similarity(options.Distance, a, b), options.Popularity))
                if (!all.TryGetValue(c.Word, out var seen) || seen.Score < c.Score)
                    all[c.Word] = c;
        var ranked = all.Values.ToList();
        ranked.Sort((a, b) =>
        {
            int c = options.Popularity ? b.Freq.CompareTo(a.Freq) : b.Score.CompareTo(a.Score);
            if (c == 0)
                c = options.Popularity ? b.Score.CompareTo(a.Score) : b.Freq.CompareTo(a.Freq);
            return c != 0 ? c : string.CompareOrdinal(a.Word, b.Word);
        });
        return ranked.Take(options.PageSize).Select(c => c.Word).ToList();
    }

    /// <summary>The field's terms and their document frequencies (across segments).</summary>
    private static IEnumerable<(string Term, int Freq)> Terms(IndexReader reader, IndexField field)
    {
        if (field.Indexing == FieldIndexing.Search)
        {
            var terms = MultiFields.GetTerms(reader, SearchQuery.FieldName(field.Id));
            if (terms == null)
                yield break;
            var te = terms.GetEnumerator();
            while (te.MoveNext())
                yield return (te.Term.Utf8ToString(), te.DocFreq);
            yield break;
        }
        var all = MultiFields.GetTerms(reader, IndexKeys.TermsField);
        if (all == null)
            yield break;
        var prefix = new BytesRef(IndexKeys.TermText(IndexKeys.FieldName(field.Id, IndexKeys.Text), ""));
        var e = all.GetEnumerator();
        if (e.SeekCeil(prefix) == TermsEnum.SeekStatus.END)
            yield break;
        do
        {
            var t = e.Term;
            if (!StringHelper.StartsWith(t, prefix))
                yield break;
            yield return (Encoding.UTF8.GetString(t.Bytes, t.Offset + prefix.Length, t.Length - prefix.Length), e.DocFreq);
        }
        while (e.MoveNext());
    }

    /// <summary>The similarity of two words under <paramref name="distance"/> (1 = equal, 0 = nothing alike).</summary>
    public static float Similarity(string distance, string a, string b) => distance switch
    {
        "JaroWinkler" => JaroWinkler(a, b),
        "NGram" => Bigrams(a, b),
        _ => Levenshtein(a, b),
    };

    private static float Levenshtein(string a, string b)
    {
        if (a.Length == 0 || b.Length == 0)
            return a.Length == b.Length ? 1 : 0;
        var prev = new int[b.Length + 1];
        var cur = new int[b.Length + 1];
        for (int j = 0; j <= b.Length; j++)
            prev[j] = j;
        for (int i = 1; i <= a.Length; i++)
        {
            cur[0] = i;
            for (int j = 1; j <= b.Length; j++)
                cur[j] = Math.Min(Math.Min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1));
            (prev, cur) = (cur, prev);
        }
        return 1f - (float)prev[b.Length] / Math.Max(a.Length, b.Length);
    }

    /// <summary>Jaro–Winkler as Lucene computes it: matches within half the longer word, the whole common prefix counted.</summary>
    private static float JaroWinkler(string a, string b)
    {
        string longer = a.Length > b.Length ? a : b, shorter = a.Length > b.Length ? b : a;
        int window = Math.Max(longer.Length / 2 - 1, 0);
        var taken = new bool[longer.Length];
        var matchedShort = new List<char>();
        for (int i = 0; i < shorter.Length; i++)
        {
            for (int k = Math.Max(i - window, 0); k < Math.Min(i + window + 1, longer.Length); k++)
            {
                if (taken[k] || shorter[i] != longer[k])
                    continue;
                taken[k] = true;
                matchedShort.Add(shorter[i]);
                break;
            }
        }
        float m = matchedShort.Count;
        if (m == 0)
            return 0;
        var matchedLong = longer.Where((_, k) => taken[k]).ToList();
        int halfTranspositions = matchedShort.Where((c, k) => c != matchedLong[k]).Count() / 2;
        int prefix = 0;
        while (prefix < shorter.Length && a[prefix] == b[prefix])
            prefix++;
        float jaro = (m / a.Length + m / b.Length + (m - halfTranspositions) / m) / 3;
        return jaro < 0.7f ? jaro : jaro + Math.Min(0.1f, 1f / longer.Length) * prefix * (1 - jaro);
    }

    /// <summary>
    /// Kondrak's n-gram distance with bigrams, as Lucene's NGramDistance: an edit distance whose substitution cost is the
    /// share of differing characters between the two words' bigrams at each position (the source padded with one NUL in
    /// front, matches on the padding not counted); words shorter than 2 compare position by position.
    /// </summary>
    private static float Bigrams(string source, string target)
    {
        const int n = 2;
        if (source.Length == 0 || target.Length == 0)
            return source.Length == target.Length ? 1 : 0;
        if (source.Length < n || target.Length < n)
        {
            int same = 0;
            for (int i = 0; i < Math.Min(source.Length, target.Length); i++)
                if (source[i] == target[i])
                    same++;
            return (float)same / Math.Max(source.Length, target.Length);
        }
        string padded = new string('\0', n - 1) + source;
        var previous = new float[source.Length + 1];
        var current = new float[source.Length + 1];
        for (int i = 0; i <= source.Length; i++)
            previous[i] = i;
        for (int j = 1; j <= target.Length; j++)
        {
            // The j-th bigram of the target, padded in front like the source.
            string gram = j < n ? new string('\0', n - j) + target[..j] : target.Substring(j - n, n);
            current[0] = j;
            for (int i = 1; i <= source.Length; i++)
            {
                int cost = 0, counted = n;
                for (int k = 0; k < n; k++)
                {
                    if (padded[i - 1 + k] != gram[k])
                        cost++;
                    else if (padded[i - 1 + k] == '\0')
                        counted--;
                }
                current[i] = Math.Min(Math.Min(current[i - 1] + 1, previous[i] + 1), previous[i - 1] + (float)cost / counted);
            }
            (previous, current) = (current, previous);
        }
        return 1f - previous[source.Length] / Math.Max(source.Length, target.Length);
    }
}

/// <summary>RavenDB's SuggestionOptions: how many, which similarity, the least similarity kept, popularity first or not.</summary>
internal sealed record SuggestOptions(int PageSize, string Distance, float Accuracy, bool Popularity)
{
    public static readonly SuggestOptions Default = new(15, "Levenshtein", 0.5f, true);
}
