namespace RavenLite.Server.Documents;

/// <summary>
/// The metadata the server keeps for a document's extensions, beside its four own keys
/// (docs/format/documents.md): <c>@flags</c> (<c>HasAttachments</c>, <c>HasCounters</c>), <c>@counters</c>
/// (the counter names, sorted ignoring case) and <c>@attachments</c> (name, hash, content type and size of
/// each, sorted by name). Clients read them but never set them: <see cref="DocumentPreparer"/> drops
/// them from incoming documents and <see cref="DocumentsWriteContext"/> carries the stored ones over an
/// update. Not thread-safe.
/// </summary>
public sealed class DocumentExtras
{
    /// <summary>The counter names, in stored casing.</summary>
    public SortedSet<string> Counters { get; } = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>The attachments by name (names compare ignoring case, as RavenDB's).</summary>
    public SortedDictionary<string, AttachmentInfo> Attachments { get; } = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>The time-series names, in stored casing.</summary>
    public SortedSet<string> TimeSeries { get; } = new(StringComparer.OrdinalIgnoreCase);

    /// <summary>Other <c>@flags</c> the server sets (<c>Artificial</c>, <c>FromIndex</c> on map-reduce output documents).</summary>
    public SortedSet<string> OtherFlags { get; } = new(StringComparer.Ordinal);

    /// <summary>The flags the server derives from the extensions (a stored <c>@flags</c> token outside them is an <see cref="OtherFlags"/> one).</summary>
    private static readonly HashSet<string> DerivedFlags = new(StringComparer.Ordinal)
    {
        "HasRevisions", "Revision", "DeleteRevision", "HasAttachments", "HasCounters", "HasTimeSeries",
    };

    /// <summary>The document has revisions (<c>HasRevisions</c>).</summary>
    public bool HasRevisions { get; set; }

    /// <summary>Written into a revision of the document, not the document (<c>Revision</c>).</summary>
    public bool IsRevision { get; set; }

    /// <summary>True when the document has no extension.</summary>
    public bool IsEmpty => Counters.Count == 0 && Attachments.Count == 0 && TimeSeries.Count == 0 && !HasRevisions && OtherFlags.Count == 0;

    /// <summary>The <c>@flags</c> value (in RavenDB's order), or null when there is none.</summary>
    public string? Flags
    {
        get
        {
            if (IsEmpty && !IsRevision)
                return null;
            var flags = new List<string>(4);
            if (HasRevisions)
                flags.Add("HasRevisions");
            if (IsRevision)
                flags.Add("Revision");
            if (Attachments.Count > 0)
                flags.Add("HasAttachments");
            if (Counters.Count > 0)
                flags.Add("HasCounters");
            if (TimeSeries.Count > 0)
                flags.Add("HasTimeSeries");
            flags.AddRange(OtherFlags);
            return string.Join(", ", flags);
        }
    }

    /// <summary>A copy (the lists are copied too).</summary>
    public DocumentExtras Clone()
    {
        var copy = new DocumentExtras { HasRevisions = HasRevisions, IsRevision = IsRevision };
        copy.Counters.UnionWith(Counters);
        copy.TimeSeries.UnionWith(TimeSeries);
        copy.OtherFlags.UnionWith(OtherFlags);
        foreach (var (k, v) in Attachments)
            copy.Attachments[k] = v;
        return copy;
    }

    /// <summary>Writes the keys (inside <c>@metadata</c>, after the server's four).</summary>
    public void Write(Utf8JsonWriter w)
    {
        if (Flags is not { } flags)
            return;
        w.WriteString("@flags"u8, flags);
        if (Counters.Count > 0)
        {
            w.WriteStartArray("@counters"u8);
            foreach (string c in Counters)
                w.WriteStringValue(c);
            w.WriteEndArray();
        }
        if (Attachments.Count > 0)
        {
            w.WriteStartArray("@attachments"u8);
            foreach (var a in Attachments.Values)
                a.Write(w);
            w.WriteEndArray();
        }
        if (TimeSeries.Count > 0)
        {
            w.WriteStartArray("@timeseries"u8);
            foreach (string t in TimeSeries)
                w.WriteStringValue(t);
            w.WriteEndArray();
        }
    }

    /// <summary>
    /// The extras of a stored document (its JSON, as DocumentRecord.Json gives it), or null
    /// when it has none. Cheap for the common case: a document without <c>"@flags"</c> is not parsed.
    /// </summary>
    public static DocumentExtras? Read(ReadOnlySpan<byte> storedJson)
    {
        if (storedJson.IndexOf("\"@flags\""u8) < 0)
            return null;
        var r = new Utf8JsonReader(storedJson, new JsonReaderOptions { MaxDepth = DocumentJson.MaxDepth + 2 });
        r.Read();
        while (r.Read() && r.TokenType == JsonTokenType.PropertyName)
        {
            bool isMetadata = r.ValueTextEquals("@metadata"u8);
            r.Read();
            if (!isMetadata)
            {
                r.Skip();
                continue;
            }
            DocumentExtras? extras = null;
            while (r.Read() && r.TokenType == JsonTokenType.PropertyName)
            {
                if (r.ValueTextEquals("@flags"u8))
                {
                    r.Read();
                    if (r.TokenType == JsonTokenType.String && r.GetString() is { } f)
                    {
                        foreach (string token in f.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries))
                        {
                            if (token == "HasRevisions")
                                (extras ??= new DocumentExtras()).HasRevisions = true;
                            else if (!DerivedFlags.Contains(token))
                                (extras ??= new DocumentExtras()).OtherFlags.Add(token);
                        }
                    }
                }
                else if (r.ValueTextEquals("@counters"u8))
                {
                    r.Read();
                    extras ??= new DocumentExtras();
                    while (r.Read() && r.TokenType == JsonTokenType.String)
                        extras.Counters.Add(r.GetString()!);
                }
                else if (r.ValueTextEquals("@timeseries"u8))
                {
                    r.Read();
                    extras ??= new DocumentExtras();
                    while (r.Read() && r.TokenType == JsonTokenType.String)
                        extras.TimeSeries.Add(r.GetString()!);
                }
                else if (r.ValueTextEquals("@attachments"u8))
                {
                    r.Read();
                    extras ??= new DocumentExtras();
                    while (r.Read() && r.TokenType == JsonTokenType.StartObject)
                    {
                        var a = AttachmentInfo.Read(ref r);
                        extras.Attachments[a.Name] = a;
                    }
                }
                else
                {
                    r.Read();
                    r.Skip();
                }
            }
            return extras is { IsEmpty: false } ? extras : null;
        }
        return null;
    }
}

/// <summary>One entry of <c>@attachments</c>: the attachment's name, content hash (base64), content type and size in bytes.</summary>
public sealed record AttachmentInfo(string Name, string Hash, string ContentType, long Size)
{
    /// <summary>Writes <c>{"Name":..,"Hash":..,"ContentType":..,"Size":..}</c>.</summary>
    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteString("Name"u8, Name);
        w.WriteString("Hash"u8, Hash);
        w.WriteString("ContentType"u8, ContentType);
        w.WriteNumber("Size"u8, Size);
        w.WriteEndObject();
    }

    /// <summary>Reads one written by <see cref="Write"/> (the reader on its <c>{</c>, left on its <c>}</c>).</summary>
    public static AttachmentInfo Read(ref Utf8JsonReader r)
    {
        string name = "", hash = "", type = "";
        long size = 0;
        while (r.Read() && r.TokenType == JsonTokenType.PropertyName)
        {
            string prop = r.GetString()!;
            r.Read();
            switch (prop)
            {
                case "Name": name = r.GetString() ?? ""; break;
                case "Hash": hash = r.GetString() ?? ""; break;
                case "ContentType": type = r.GetString() ?? ""; break;
                case "Size": size = r.GetInt64(); break;
                default: r.Skip(); break;
            }
        }
        return new AttachmentInfo(name, hash, type, size);
    }
}
