using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Counters;

/// <summary>
/// The counters a load or query includes (<c>?counter=name</c>, <c>?counter=@all_counters</c>, RQL
/// <c>include counters(...)</c>): per document, the details of the named counters (null for a name the
/// document lacks) or of all its counters, written as <c>"CounterIncludes":{"id":[...]}</c> and, for
/// queries, <c>"IncludedCounterNames":{"id":[names]}</c> (<c>[]</c> for all of them).
/// </summary>
public sealed class CounterIncludes
{
    /// <summary>The name that asks for every counter.</summary>
    public const string All = "@all_counters";

    private readonly List<string> _names;
    private readonly bool _all;
    private readonly Dictionary<string, List<CounterDetail?>> _byDocument = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>Includes <paramref name="names"/> (or every counter when one of them is <see cref="All"/>).</summary>
    public CounterIncludes(IEnumerable<string> names)
    {
        _names = names.Where(n => n.Length > 0).Distinct(StringComparer.OrdinalIgnoreCase).ToList();
        _all = _names.Contains(All, StringComparer.OrdinalIgnoreCase);
        if (_all)
            _names.Clear();
    }

    /// <summary>Reads the included counters of document <paramref name="id"/> (once per document).</summary>
    public void Add(Transaction tx, DocumentsStorage documents, string id)
    {
        if (!_byDocument.ContainsKey(id))
            _byDocument[id] = CounterBatch.Read(tx, documents, id, _names);
    }

    /// <summary>Adds what the answer's ETag must change with (every included counter's version and value).</summary>
    public void AddTagParts(List<string?> parts)
    {
        foreach (var (id, details) in _byDocument.OrderBy(p => p.Key, StringComparer.OrdinalIgnoreCase))
            foreach (var d in details)
                parts.Add(d == null ? id + "\ncounter:null" : $"{id}\ncounter:{d.Counter.Name}:{d.Counter.Version}:{d.Counter.Value}");
    }

    /// <summary>Writes <c>"CounterIncludes":{...}</c>, and <c>"IncludedCounterNames"</c> when <paramref name="names"/>.</summary>
    public void Write(Utf8JsonWriter w, bool names = false)
    {
        w.WriteStartObject("CounterIncludes"u8);
        foreach (var (id, details) in _byDocument)
        {
            w.WritePropertyName(id);
            CounterBatch.WriteDetailArray(w, details, full: false);
        }
        w.WriteEndObject();
        if (!names)
            return;
        w.WriteStartObject("IncludedCounterNames"u8);
        foreach (var (id, details) in _byDocument)
        {
            // Every counter: an empty list, which RavenDB's clients read as "all of them" (so a session knows it has them all).
            w.WriteStartArray(id);
            if (!_all)
                foreach (string n in _names)
                    w.WriteStringValue(n);
            w.WriteEndArray();
        }
        w.WriteEndObject();
    }
}
