namespace RavenLite.Server.Indexing;

/// <summary>
/// An auto index as RavenDB's database record holds it under <c>AutoIndexes</c> (its <c>AutoIndexDefinition</c>):
/// <c>{Type, Name, Collection, Priority, State, LockMode, MapFields: {path: options}, GroupByFields, GroupByFieldNames}</c>.
/// </summary>
public static class AutoIndexDefinitionJson
{
    public static void Write(Utf8JsonWriter w, IndexDefinition d)
    {
        ArgumentNullException.ThrowIfNull(w);
        ArgumentNullException.ThrowIfNull(d);
        w.WriteStartObject();
        w.WriteString("Type", d.Type);
        w.WriteString("Name", d.Name);
        w.WriteString("Collection", d.Collection);
        w.WriteString("Priority", d.Priority);
        w.WriteString("State", d.State);
        w.WriteString("LockMode", d.LockMode);
        w.WriteStartObject("MapFields");
        if (d.Type == "AutoMapReduce")
        {
            foreach (string sum in d.AutoSums)
                Field(w, sum, "Sum", indexing: "No", arrays: false);
            Field(w, AutoMapReduce.CountField, "Count", indexing: "No", arrays: false);
        }
        else
        {
            foreach (var f in d.AutoFields)
                Field(w, f.Path, "None", f.Search ? "Search" : "Default", arrays: false);
        }
        w.WriteEndObject();
        w.WriteStartObject("GroupByFields");
        foreach (string g in d.AutoGroupBy)
            Field(w, g, "None", "Default", arrays: g.Contains("[]", StringComparison.Ordinal));
        w.WriteEndObject();
        w.WriteStartArray("GroupByFieldNames");
        foreach (string g in d.AutoGroupBy)
            w.WriteStringValue(g);
        w.WriteEndArray();
        w.WriteEndObject();
    }

    private static void Field(Utf8JsonWriter w, string name, string aggregation, string indexing, bool arrays)
    {
        w.WriteStartObject(name);
        w.WriteString("Storage", "No");
        w.WriteString("Indexing", indexing);
        w.WriteString("Aggregation", aggregation);
        w.WriteNull("Spatial");
        w.WriteString("GroupByArrayBehavior", arrays ? "ByIndividualValues" : "NotApplicable");
        w.WriteBoolean("Suggestions", false);
        w.WriteBoolean("IsNameQuoted", false);
        w.WriteEndObject();
    }
}
