using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The terms of one index field as RavenDB's <c>GetTermsOperation</c> lists them: a Search field's analyzed words, else
/// its values as indexed (text lower-cased, numbers in their shortest invariant form, booleans as true/false), in
/// ordinal order, distinct, after <c>fromValue</c>, at most a page of them.
/// </summary>
internal static class IndexTerms
{
    public static List<string> Of(Index index, string field, string? fromValue, int pageSize)
    {
        var f = index.Compiled.Field(field)
            ?? throw new InvalidQueryException($"The field '{field}' is not indexed by index '{index.Name}'; its fields are: {string.Join(", ", index.Compiled.Fields.Select(x => x.Name))}.");
        var snapshot = index.AcquireSnapshot();
        try
        {
            var terms = new SortedSet<string>(StringComparer.Ordinal);
            foreach (var leaf in snapshot.Reader.Leaves)
            {
                if (f.Indexing == FieldIndexing.Search)
                {
                    var words = leaf.AtomicReader.GetTerms(SearchQuery.FieldName(f.Id))?.GetEnumerator();
                    while (words != null && words.MoveNext())
                        terms.Add(words.Term.Utf8ToString());
                    continue;
                }
                Add(leaf.AtomicReader, f, IndexKeys.Text, terms, t => t);
                Add(leaf.AtomicReader, f, IndexKeys.Number, terms, t => IndexKeys.NumberOfTerm(System.Text.Encoding.UTF8.GetBytes(t)).ToString("R", System.Globalization.CultureInfo.InvariantCulture));
                Add(leaf.AtomicReader, f, IndexKeys.Bool, terms, t => t == "1" ? "true" : "false");
            }
            return terms.Where(t => fromValue == null || string.CompareOrdinal(t, fromValue) > 0).Take(pageSize).ToList();
        }
        finally
        {
            Index.ReleaseSnapshot(snapshot);
        }
    }

    private static void Add(Lucene.Net.Index.AtomicReader segment, IndexField field, char kind, SortedSet<string> into, Func<string, string> display)
    {
        string prefix = IndexKeys.TermText(IndexKeys.FieldName(field.Id, kind), "");
        foreach (var te in IndexKeys.SegmentTerms(segment, new BytesRef(prefix)))
            into.Add(display(te.Term.Utf8ToString()[prefix.Length..]));
    }
}
