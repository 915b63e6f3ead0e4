using Lucene.Net.Index;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// <c>suggest(field, term)</c>: the terms an index holds for a field that are most like the given word, as
/// RavenDB's suggestions (built on Lucene term enumeration; Lucene.Net.Suggest is not served). The candidates
/// are the field's index terms — a Search field's analyzed words, else its whole lower-cased values — each
/// with its document frequency. A candidate is kept when its similarity to the (lower-cased) word is at
/// least <see cref="SuggestOptions.Accuracy"/> and it is not the word itself; they are ranked by popularity
/// (document frequency, then similarity) or by similarity alone, ties by term, and the first
/// <see cref="SuggestOptions.PageSize"/> returned. Similarities, 1 = equal:
/// <list type="bullet">
/// <item>Levenshtein (default): 1 − edit distance / length of the longer word (Lucene's LevensteinDistance).</item>
/// <item>JaroWinkler: Jaro similarity, raised for a common prefix of up to 4 characters when over 0.7.</item>
/// <item>NGram: Dice coefficient of the two words' character bigrams (each word padded with one space at both ends).</item>
/// </list>
/// Cost: one pass over the field's terms per call. Thread-safe (no state).
/// </summary>
internal static class Suggester
{
    /// <summary>Suggestions for <paramref name="words"/> from <paramref name="field"/>'s terms in <paramref name="reader"/>.</summary>
    public static List<string> Suggest(IndexReader reader, IndexField field, IReadOnlyList<string> words, SuggestOptions options)
    {
        var best = new Dictionary<string, (float Score, int Freq)>(StringComparer.Ordinal);
        var lowered = words.Select(w => w.ToLowerInvariant()).ToList();
        foreach (var (term, freq) in Terms(reader, field))
        {
            foreach (string word in lowered)
            {
                if (term == word)
                    continue;
                float score = Similarity(options.Distance, word, term);
                if (score < options.Accuracy)
                    continue;
                if (!best.TryGetValue(term, out var seen) || seen.Score < score)
                    best[term] = (score, freq);
            }
        }
        var ranked = best.ToList();
        ranked.Sort((a, b) =>
        {
            int c = options.Popularity ? b.Value.Freq.CompareTo(a.Value.Freq) : b.Value.Score.CompareTo(a.Value.Score);
            if (c == 0)
                c = options.Popularity ? b.Value.Score.CompareTo(a.Value.Score) : b.Value.Freq.CompareTo(a.Value.Freq);
            return c != 0 ? c : string.CompareOrdinal(a.Key, b.Key);
        });
        return ranked.Take(options.PageSize).Select(kv => kv.Key).ToList();
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

    private static float JaroWinkler(string a, string b)
    {
        if (a.Length == 0 || b.Length == 0)
            return a.Length == b.Length ? 1 : 0;
        int window = Math.Max(0, Math.Max(a.Length, b.Length) / 2 - 1);
        var usedA = new bool[a.Length];
        var usedB = new bool[b.Length];
        int matches = 0;
        for (int i = 0; i < a.Length; i++)
        {
            for (int j = Math.Max(0, i - window); j < Math.Min(b.Length, i + window + 1); j++)
            {
                if (usedB[j] || a[i] != b[j])
                    continue;
                usedA[i] = usedB[j] = true;
                matches++;
                break;
            }
        }
        if (matches == 0)
            return 0;
        int transpositions = 0;
        for (int i = 0, j = 0; i < a.Length; i++)
        {
            if (!usedA[i])
                continue;
            while (!usedB[j])
                j++;
            if (a[i] != b[j])
                transpositions++;
            j++;
        }
        float m = matches;
        float jaro = (m / a.Length + m / b.Length + (m - transpositions / 2f) / m) / 3f;
        if (jaro <= 0.7f)
            return jaro;
        int prefix = 0;
        while (prefix < Math.Min(4, Math.Min(a.Length, b.Length)) && a[prefix] == b[prefix])
            prefix++;
        return jaro + prefix * 0.1f * (1 - jaro);
    }

    private static float Bigrams(string a, string b)
    {
        static Dictionary<(char, char), int> Of(string s)
        {
            string padded = " " + s + " ";
            var grams = new Dictionary<(char, char), int>();
            for (int i = 0; i + 1 < padded.Length; i++)
                grams[(padded[i], padded[i + 1])] = grams.GetValueOrDefault((padded[i], padded[i + 1])) + 1;
            return grams;
        }
        var ga = Of(a);
        var gb = Of(b);
        int common = ga.Sum(kv => Math.Min(kv.Value, gb.GetValueOrDefault(kv.Key)));
        return 2f * common / (a.Length + 1 + b.Length + 1);
    }
}

/// <summary>RavenDB's SuggestionOptions: how many, which similarity, the least similarity kept, popularity first or not.</summary>
internal sealed record SuggestOptions(int PageSize, string Distance, float Accuracy, bool Popularity)
{
    public static readonly SuggestOptions Default = new(15, "Levenshtein", 0.5f, true);
}
