namespace RavenLite.Server.Indexing.Analysis;

/// <summary>
/// The base of a custom sorter (<c>PUT /admin/sorters</c>, <c>PUT /databases/X/admin/sorters</c>) that
/// <c>order by custom(Field, 'Name')</c> uses. RavenDB's sorters are Lucene 3 <c>FieldComparator</c>s, which neither
/// compile against Lucene.Net 4.8 nor see RavenLite's index layout; a RavenLite sorter compares two values of the field
/// as the entries (or documents) hold them, as text (numbers in invariant form; null when the field has no value).
/// It is made once per query, with a parameterless constructor or RavenDB's
/// <c>(string fieldName, int numHits, int sortPos, bool reversed, List&lt;string&gt; diagnostics)</c>.
/// </summary>
public abstract class CustomSorter
{
    /// <summary>Less than zero when <paramref name="x"/> comes first, zero when they tie, more when <paramref name="y"/> does (ascending order).</summary>
    public abstract int Compare(string? x, string? y);
}
