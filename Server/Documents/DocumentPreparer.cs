namespace RavenLite.Server.Documents;

/// <summary>
/// Validates an incoming document and writes its prepared form in one pass of a
/// <see cref="Utf8JsonReader"/> (no DOM): a JSON object, depth ≤ <see cref="DocumentJson.MaxDepth"/>,
/// no duplicate keys at any level (names compared unescaped), valid UTF-8, a usable
/// <c>@metadata</c> (an object) and <c>@metadata.@collection</c> (a string or null). The prepared form
/// is what <see cref="DocumentJson.WriteStored"/> completes: <c>{...properties...,"@metadata":</c> (the
/// prefix) then <c>,...client metadata properties...}}</c>; property names and values are copied as raw
/// bytes, never re-encoded. Every problem is a 400 naming it. One instance per thread
/// (<see cref="Current"/>): it keeps the buffers of the duplicate-key check between documents.
/// </summary>
public sealed class DocumentPreparer
{
    /// <summary>An object with more properties than this checks duplicates through a hash set instead of a scan.</summary>
    private const int ScanLimit = 16;

    private static readonly JsonReaderOptions DocumentOptions = new() { MaxDepth = DocumentJson.MaxDepth, CommentHandling = JsonCommentHandling.Disallow };

    [ThreadStatic]
    private static DocumentPreparer? t_current;

    // Property names of the objects open on the path (unescaped), for the duplicate check: entry i is
    // _names[_nameStart[i] .. _nameStart[i] + _nameLength[i]]; _frames[d] is the first entry of the object at nesting d.
    private byte[] _names = new byte[4096];
    private int[] _nameStart = new int[256];
    private int[] _nameLength = new int[256];
    private int _entries;
    private readonly int[] _frames = new int[DocumentJson.MaxDepth + 8];
    private readonly HashSet<int>?[] _sets = new HashSet<int>?[DocumentJson.MaxDepth + 8];
    private int _depth;
    private readonly NameComparer _comparer;
    private string? _lastCollection; // validated already: documents in a row mostly name the same collection

    private DocumentPreparer() => _comparer = new NameComparer(this);

    /// <summary>This thread's instance.</summary>
    public static DocumentPreparer Current => t_current ??= new DocumentPreparer();

    /// <summary>
    /// Validates the document <paramref name="json"/> (the whole input is one JSON object) and writes its
    /// prepared form to <paramref name="output"/>; returns the prefix's length and the collection.
    /// </summary>
    public int Prepare(ReadOnlySpan<byte> json, IBufferWriter<byte> output, out string collection)
    {
        if (!System.Text.Unicode.Utf8.IsValid(json))
            throw new BadRequestException("Invalid JSON: the body is not valid UTF-8.");
        var r = new Utf8JsonReader(json, DocumentOptions);
        int prefix;
        try
        {
            if (!r.Read())
                throw new BadRequestException("Invalid JSON: the document is empty.");
            if (r.TokenType != JsonTokenType.StartObject)
            {
                var kind = r.TokenType;
                r.Skip(); // malformed JSON is reported as such before the shape
                while (r.Read())
                {
                }
                throw new BadRequestException($"A document must be a JSON object, not {KindOf(kind)}.");
            }
            Reset();
            if (!TryPrepareAt(ref r, json, output, out prefix, out collection))
                throw new BadRequestException("Invalid JSON: the document ends early.");
            if (r.Read())
                throw new BadRequestException($"Invalid JSON: unexpected {r.TokenType} after the document at byte {r.TokenStartIndex}.");
        }
        catch (JsonException e)
        {
            throw Invalid(e);
        }
        return prefix;
    }

    /// <summary>
    /// <see cref="Prepare"/> for a document inside a larger input: <paramref name="r"/> (reading
    /// <paramref name="source"/> from its start, which the caller checked for UTF-8, with a MaxDepth that
    /// leaves the document <see cref="DocumentJson.MaxDepth"/> levels) is on the document's first token
    /// and is left on its last. Call inside <see cref="BeginEnvelope"/>. <see cref="JsonException"/>s of the reader pass through (map them with <see cref="Invalid"/>).
    /// False when a reader over a partial block ran out of input first (what was written to <paramref name="output"/> is then incomplete).
    /// </summary>
    public bool TryPrepareAt(ref Utf8JsonReader r, ReadOnlySpan<byte> source, IBufferWriter<byte> output, out int prefix, out string collection)
    {
        if (r.TokenType != JsonTokenType.StartObject)
            throw new BadRequestException($"A document must be a JSON object, not {KindOf(r.TokenType)}.");
        collection = Collections.Empty;
        prefix = 0;
        int written = 0;
        Write(output, "{"u8, ref written);
        bool first = true, sawMetadata = false;
        int metaStart = 0, metaEnd = 0;
        OpenObject();
        while (true)
        {
            if (!TryNextName(ref r, out bool end))
                return false;
            if (end)
                break;
            var name = r.ValueSpan;
            bool isMetadata = r.ValueTextEquals("@metadata"u8);
            if (!r.Read())
                return false;
            int valueStart = (int)r.TokenStartIndex;
            if (isMetadata)
            {
                if (r.TokenType != JsonTokenType.StartObject)
                    throw new BadRequestException("@metadata must be a JSON object.");
                sawMetadata = true;
                metaStart = valueStart;
                if (!TryReadMetadata(ref r, out collection))
                    return false;
                metaEnd = (int)r.BytesConsumed;
                continue;
            }
            if (!TrySkipValue(ref r))
                return false;
            if (!first)
                Write(output, ","u8, ref written);
            first = false;
            WriteName(output, name, ref written);
            Write(output, source[valueStart..(int)r.BytesConsumed], ref written);
        }
        CloseObject();
        if (!first)
            Write(output, ","u8, ref written);
        Write(output, "\"@metadata\":"u8, ref written);
        prefix = written;
        if (sawMetadata)
            WriteClientMetadata(source[metaStart..metaEnd], output, ref written);
        Write(output, "}}"u8, ref written);
        return true;
    }

    /// <summary>Skips the value whose first token <paramref name="r"/> is on, checking every object in it for duplicate keys; false when the input ran out first.</summary>
    public bool TrySkipValue(ref Utf8JsonReader r)
    {
        if (r.TokenType == JsonTokenType.StartArray)
        {
            while (true)
            {
                if (!r.Read())
                    return false;
                if (r.TokenType == JsonTokenType.EndArray)
                    return true;
                if (!TrySkipValue(ref r))
                    return false;
            }
        }
        if (r.TokenType != JsonTokenType.StartObject)
            return true;
        OpenObject();
        while (true)
        {
            if (!TryNextName(ref r, out bool end))
                return false;
            if (end)
                break;
            if (!r.Read() || !TrySkipValue(ref r))
                return false;
        }
        CloseObject();
        return true;
    }

    /// <summary>Starts the duplicate check of an object read outside a document (a bulk-insert item's own keys); end it with <see cref="CloseObject"/>.</summary>
    public void BeginEnvelope()
    {
        Reset();
        OpenObject();
    }

    /// <summary>
    /// Moves to the next property of the innermost open object: <paramref name="end"/> at its <c>}</c>, else the reader is on
    /// the name, which is recorded for the duplicate check. False when the input ran out first.
    /// </summary>
    public bool TryNextName(ref Utf8JsonReader r, out bool end)
    {
        end = false;
        if (!r.Read())
            return false;
        if (r.TokenType == JsonTokenType.EndObject)
        {
            end = true;
            return true;
        }
        AddName(ref r);
        return true;
    }

    /// <summary>Records a property name of the innermost open object; 400 when it already has it.</summary>
    public void AddName(ref Utf8JsonReader r)
    {
        int start = NamesEnd;
        EnsureNames(start, r.ValueSpan.Length); // unescaping never lengthens
        int length = r.ValueIsEscaped ? Unescape(ref r, _names.AsSpan(start)) : r.ValueSpan.Length;
        if (!r.ValueIsEscaped)
            r.ValueSpan.CopyTo(_names.AsSpan(start));
        if (_entries == _nameStart.Length)
        {
            Array.Resize(ref _nameStart, _entries * 2);
            Array.Resize(ref _nameLength, _entries * 2);
        }
        _nameStart[_entries] = start;
        _nameLength[_entries] = length;
        var name = _names.AsSpan(start, length);
        int frame = _frames[_depth - 1];
        var set = _sets[_depth - 1];
        bool duplicate;
        if (set != null && set.Count > 0)
        {
            duplicate = !set.Add(_entries);
        }
        else
        {
            duplicate = false;
            for (int i = frame; i < _entries; i++)
            {
                if (_nameLength[i] == length && _names.AsSpan(_nameStart[i], length).SequenceEqual(name))
                {
                    duplicate = true;
                    break;
                }
            }
            if (!duplicate && _entries - frame >= ScanLimit)
            {
                set = _sets[_depth - 1] ??= new HashSet<int>(_comparer);
                for (int i = frame; i <= _entries; i++)
                    set.Add(i);
            }
        }
        if (duplicate)
            throw new BadRequestException($"Invalid JSON: Duplicate property '{Encoding.UTF8.GetString(name)}' in one object (duplicate keys are not allowed).");
        _entries++;
    }

    /// <summary>Ends the innermost object's duplicate check.</summary>
    public void CloseObject()
    {
        _depth--;
        _entries = _frames[_depth];
        _sets[_depth]?.Clear();
    }

    /// <summary>The 400 for a reader error (depth gets its own wording).</summary>
    public static BadRequestException Invalid(JsonException e) =>
        e.Message.Contains("maximum configured depth", StringComparison.Ordinal)
            ? new BadRequestException($"Invalid JSON: it nests deeper than allowed (documents may nest at most {DocumentJson.MaxDepth} levels). {e.Message}")
            : new BadRequestException("Invalid JSON: " + e.Message);

    private void Reset()
    {
        for (int d = 0; d < _depth; d++)
            _sets[d]?.Clear();
        _depth = 0;
        _entries = 0;
    }

    /// <summary>Where the next name goes in <see cref="_names"/>: right after the last recorded one.</summary>
    private int NamesEnd => _entries == 0 ? 0 : _nameStart[_entries - 1] + _nameLength[_entries - 1];

    private void OpenObject()
    {
        _frames[_depth++] = _entries;
    }

    /// <summary>Reads <c>@metadata</c> (the reader on its <c>{</c>, left on its <c>}</c>) and the collection it names; false when the input ran out first.</summary>
    private bool TryReadMetadata(ref Utf8JsonReader r, out string collection)
    {
        collection = Collections.Empty;
        OpenObject();
        while (true)
        {
            if (!TryNextName(ref r, out bool end))
                return false;
            if (end)
                break;
            bool isCollection = r.ValueTextEquals("@collection"u8);
            if (!r.Read())
                return false;
            if (isCollection)
                collection = CollectionName(ref r);
            if (!TrySkipValue(ref r))
                return false;
        }
        CloseObject();
        return true;
    }

    /// <summary>The collection a <c>@collection</c> value names: a string (validated; empty means none) or null.</summary>
    private string CollectionName(ref Utf8JsonReader r)
    {
        if (r.TokenType == JsonTokenType.Null)
            return Collections.Empty;
        if (r.TokenType != JsonTokenType.String)
            throw new BadRequestException("@metadata.@collection must be a string.");
        if (_lastCollection != null && r.ValueTextEquals(_lastCollection))
            return _lastCollection;
        string name = r.GetString()!;
        if (name.Length == 0)
            return Collections.Empty;
        Collections.Validate(name);
        return _lastCollection = name;
    }

    /// <summary>
    /// Writes the client's metadata properties of <paramref name="metadata"/> (checked already), each after a comma;
    /// the keys the server owns are left out (its four, and <c>@flags</c>, <c>@counters</c>, <c>@attachments</c>, <c>@timeseries</c>,
    /// which a client sends back from a document it loaded: the stored ones stay).
    /// </summary>
    private static void WriteClientMetadata(ReadOnlySpan<byte> metadata, IBufferWriter<byte> output, ref int written)
    {
        var r = new Utf8JsonReader(metadata, DocumentOptions);
        r.Read();
        while (r.Read() && r.TokenType == JsonTokenType.PropertyName)
        {
            var name = r.ValueSpan;
            bool server = r.ValueTextEquals("@collection"u8) || r.ValueTextEquals("@id"u8) || r.ValueTextEquals("@change-vector"u8) || r.ValueTextEquals("@last-modified"u8)
                || r.ValueTextEquals("@flags"u8) || r.ValueTextEquals("@counters"u8) || r.ValueTextEquals("@attachments"u8) || r.ValueTextEquals("@timeseries"u8);
            r.Read();
            int start = (int)r.TokenStartIndex;
            r.Skip();
            if (server)
                continue;
            Write(output, ","u8, ref written);
            WriteName(output, name, ref written);
            Write(output, metadata[start..(int)r.BytesConsumed], ref written);
        }
    }

    private static int Unescape(ref Utf8JsonReader r, Span<byte> destination)
    {
        try
        {
            return r.CopyString(destination);
        }
        catch (InvalidOperationException e)
        {
            throw new BadRequestException("Invalid JSON: a property name has an invalid escape. " + e.Message);
        }
    }

    private void EnsureNames(int start, int length)
    {
        if (_names.Length - start < length)
            Array.Resize(ref _names, Math.Max(_names.Length * 2, start + length));
    }

    private static string KindOf(JsonTokenType t) => t switch
    {
        JsonTokenType.StartArray => "Array",
        JsonTokenType.String => "String",
        JsonTokenType.Number => "Number",
        JsonTokenType.True or JsonTokenType.False => "a boolean",
        JsonTokenType.Null => "Null",
        _ => t.ToString(),
    };

    private static void WriteName(IBufferWriter<byte> output, ReadOnlySpan<byte> rawName, ref int written)
    {
        Write(output, "\""u8, ref written);
        Write(output, rawName, ref written);
        Write(output, "\":"u8, ref written);
    }

    private static void Write(IBufferWriter<byte> output, ReadOnlySpan<byte> bytes, ref int written)
    {
        output.Write(bytes);
        written += bytes.Length;
    }

    /// <summary>Equality of two recorded names (entry indexes) by their bytes.</summary>
    private sealed class NameComparer(DocumentPreparer owner) : IEqualityComparer<int>
    {
        public bool Equals(int x, int y) => Name(x).SequenceEqual(Name(y));

        public int GetHashCode(int entry)
        {
            var h = new HashCode();
            h.AddBytes(Name(entry));
            return h.ToHashCode();
        }

        private ReadOnlySpan<byte> Name(int entry) => owner._names.AsSpan(owner._nameStart[entry], owner._nameLength[entry]);
    }
}
