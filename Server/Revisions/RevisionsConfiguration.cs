namespace RavenLite.Server.Revisions;

/// <summary>How one collection keeps revisions (RavenDB's <c>RevisionsCollectionConfiguration</c>).</summary>
public sealed record RevisionsCollectionConfiguration(bool Disabled, long? MinimumRevisionsToKeep, TimeSpan? MinimumRevisionAgeToKeep, bool PurgeOnDelete,
    long? MaximumRevisionsToDeleteUponDocumentUpdate);

/// <summary>
/// The revisions configuration of a database (<c>POST /admin/revisions/config</c>): a default for every collection
/// and per-collection overrides (names ignore case). Stored as its JSON in <c>State/RevisionsConfiguration</c>.
/// </summary>
public sealed class RevisionsConfiguration
{
    /// <summary>For collections without their own entry; null: no revisions.</summary>
    public RevisionsCollectionConfiguration? Default { get; init; }

    /// <summary>Per-collection entries.</summary>
    public IReadOnlyDictionary<string, RevisionsCollectionConfiguration> Collections { get; init; } =
        new Dictionary<string, RevisionsCollectionConfiguration>(StringComparer.OrdinalIgnoreCase);

    /// <summary>The configuration that applies to <paramref name="collection"/>, or null when it keeps no revisions.</summary>
    public RevisionsCollectionConfiguration? For(string collection)
    {
        if (Documents.Collections.IsHiLoCollection(collection))
            return null;
        var c = Collections.TryGetValue(collection, out var own) ? own : Default;
        return c is { Disabled: false } ? c : null;
    }

    /// <summary>The configuration of <paramref name="collection"/> even when disabled (for purge on delete), or null.</summary>
    public RevisionsCollectionConfiguration? Raw(string collection) => Collections.TryGetValue(collection, out var own) ? own : Default;

    /// <summary>Parses and checks a configuration; 400 naming what is wrong.</summary>
    public static RevisionsConfiguration Parse(JsonElement root)
    {
        if (root.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("A revisions configuration is an object {\"Default\":{..},\"Collections\":{\"Name\":{..}}}.");
        RevisionsCollectionConfiguration? def = null;
        if (root.TryGetProperty(nameof(Default), out var d) && d.ValueKind != JsonValueKind.Null)
            def = ParseCollection(d, "Default");
        var collections = new Dictionary<string, RevisionsCollectionConfiguration>(StringComparer.OrdinalIgnoreCase);
        if (root.TryGetProperty(nameof(Collections), out var cs) && cs.ValueKind != JsonValueKind.Null)
        {
            if (cs.ValueKind != JsonValueKind.Object)
                throw new BadRequestException("Collections of a revisions configuration must be an object of collection name to configuration.");
            foreach (var p in cs.EnumerateObject())
                collections[p.Name] = ParseCollection(p.Value, $"Collections.{p.Name}");
        }
        return new RevisionsConfiguration { Default = def, Collections = collections };
    }

    private static RevisionsCollectionConfiguration ParseCollection(JsonElement e, string where)
    {
        if (e.ValueKind != JsonValueKind.Object)
            throw new BadRequestException($"{where} of the revisions configuration must be an object.");
        bool Bool(string name) => e.TryGetProperty(name, out var v) && (v.ValueKind == JsonValueKind.True
            || (v.ValueKind is not (JsonValueKind.False or JsonValueKind.Null) ? throw new BadRequestException($"{where}.{name} must be true or false.") : false));
        long? Count(string name)
        {
            if (!e.TryGetProperty(name, out var v) || v.ValueKind == JsonValueKind.Null)
                return null;
            return v.ValueKind == JsonValueKind.Number && v.TryGetInt64(out long n) && n >= 0 ? n : throw new BadRequestException($"{where}.{name} must be a whole number ≥ 0.");
        }
        TimeSpan? age = null;
        if (e.TryGetProperty("MinimumRevisionAgeToKeep", out var a) && a.ValueKind != JsonValueKind.Null)
            age = a.ValueKind == JsonValueKind.String && TimeSpan.TryParse(a.GetString(), CultureInfo.InvariantCulture, out var t) && t >= TimeSpan.Zero ? t
                : throw new BadRequestException($"{where}.MinimumRevisionAgeToKeep must be a time span such as \"7.00:00:00\".");
        return new RevisionsCollectionConfiguration(Bool("Disabled"), Count("MinimumRevisionsToKeep"), age, Bool("PurgeOnDelete"), Count("MaximumRevisionsToDeleteUponDocumentUpdate"));
    }

    /// <summary>Writes the configuration as RavenDB's JSON.</summary>
    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WritePropertyName(nameof(Default));
        WriteCollection(w, Default);
        w.WriteStartObject(nameof(Collections));
        foreach (var (name, c) in Collections)
        {
            w.WritePropertyName(name);
            WriteCollection(w, c);
        }
        w.WriteEndObject();
        w.WriteEndObject();
    }

    private static void WriteCollection(Utf8JsonWriter w, RevisionsCollectionConfiguration? c)
    {
        if (c == null)
        {
            w.WriteNullValue();
            return;
        }
        w.WriteStartObject();
        w.WriteBoolean("Disabled", c.Disabled);
        if (c.MinimumRevisionsToKeep is { } n)
            w.WriteNumber("MinimumRevisionsToKeep", n);
        else
            w.WriteNull("MinimumRevisionsToKeep");
        if (c.MinimumRevisionAgeToKeep is { } age)
            w.WriteString("MinimumRevisionAgeToKeep", age.ToString("c", CultureInfo.InvariantCulture));
        else
            w.WriteNull("MinimumRevisionAgeToKeep");
        w.WriteBoolean("PurgeOnDelete", c.PurgeOnDelete);
        if (c.MaximumRevisionsToDeleteUponDocumentUpdate is { } m)
            w.WriteNumber("MaximumRevisionsToDeleteUponDocumentUpdate", m);
        else
            w.WriteNull("MaximumRevisionsToDeleteUponDocumentUpdate");
        w.WriteEndObject();
    }
}
