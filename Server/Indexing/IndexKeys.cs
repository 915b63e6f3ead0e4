namespace RavenLite.Server.Indexing;

/// <summary>
/// The Lucene terms of an index's entries (docs/format/indexes.md). Every term is in one Lucene field,
/// <see cref="TermsField"/>, as <c>{field id}{kind}|{value}</c>, so one token stream indexes a whole entry
/// and each field kind is a contiguous run of terms. Kinds: <c>S</c> lower-cased text (at most
/// <see cref="MaxTermBytes"/> UTF-8 bytes, cut at a character boundary, NUL as U+0001), <c>N</c> a
/// number as 16 hex digits of order-preserving bits, <c>B</c> a boolean (<c>0</c>/<c>1</c>), <c>Z</c>
/// null (the empty term), <c>E</c> "the field has a value
/// with no term of its own" (an object; the empty term). "Has the field" is therefore every S, N, B, Z
/// and E term of it. Every mapping from value to term is order-preserving (never strictly reversing),
/// so an equality, prefix or range lookup over terms yields a superset of the true matches; queries
/// then check each candidate exactly, so truncation and case folding can never lose or invent a result.
/// Search fields also have an analyzed text field each (<see cref="SearchQuery.FieldName"/>) for search().
/// </summary>
internal static class IndexKeys
{
    public const char Exists = 'E', Text = 'S', Number = 'N', Bool = 'B', Null = 'Z', GeoPrefix = 'G', GeoCell = 'H', Multi = 'M';

    /// <summary>At most this many geohash cells index one shape (or look up one query shape).</summary>
    public const int MaxGeoCells = 16;
    public const int MaxTermBytes = 256;

    /// <summary>The Lucene field that holds every term.</summary>
    public const string TermsField = "@terms";

    /// <summary>The name of one kind of term of one mapped field (the prefix of its terms).</summary>
    public static string FieldName(ushort field, char kind) => field.ToString(System.Globalization.CultureInfo.InvariantCulture) + kind;

    /// <summary>The Lucene term text of <paramref name="term"/> of field kind <paramref name="fieldName"/>.</summary>
    public static string TermText(string fieldName, string term) => fieldName + "|" + term;

    /// <summary>Lower-cased (unless <paramref name="lower"/> is false), NUL as U+0001, cut to at most <see cref="MaxTermBytes"/> UTF-8 bytes at a character boundary.</summary>
    public static string TextTerm(string s, bool lower = true)
    {
        if (lower)
            s = s.ToLowerInvariant();
        if (s.Contains('\0'))
            s = s.Replace('\0', '\u0001');
        if (Encoding.UTF8.GetByteCount(s) <= MaxTermBytes)
            return s;
        int bytes = 0, i = 0;
        while (i < s.Length)
        {
            int width = char.IsHighSurrogate(s[i]) && i + 1 < s.Length ? 2 : 1;
            int n = Encoding.UTF8.GetByteCount(s.AsSpan(i, width));
            if (bytes + n > MaxTermBytes)
                break;
            bytes += n;
            i += width;
        }
        return s[..i];
    }

    /// <summary>
    /// A double as a long whose signed order is the numeric order (-0 as 0): negatives with their low 63 bits
    /// flipped. Never <see cref="long.MinValue"/> or <see cref="long.MaxValue"/> for a finite number (the sort
    /// keys use those for "none" and "not a number").
    /// </summary>
    public static long SortableBits(double d)
    {
        if (d == 0)
            d = 0;
        long bits = BitConverter.DoubleToInt64Bits(d);
        return bits < 0 ? bits ^ long.MaxValue : bits;
    }

    /// <summary>The number <see cref="SortableBits"/> encoded.</summary>
    public static double FromSortableBits(long v) => BitConverter.Int64BitsToDouble(v < 0 ? v ^ long.MaxValue : v);

    /// <summary>A double as 16 hex digits whose order is the numeric order: <see cref="SortableBits"/> with the sign bit flipped (unsigned order).</summary>
    public static string NumberTerm(double d)
    {
        Span<byte> b = stackalloc byte[8];
        BinaryPrimitives.WriteInt64BigEndian(b, SortableBits(d) ^ long.MinValue);
        return Convert.ToHexString(b);
    }

    /// <summary>
    /// The terms of a spatial field's shapes (WKT): the geohash cells covering each shape (a point's level-9
    /// cell; a polygon's at most <see cref="MaxGeoCells"/> cells) as <c>H</c> terms, and every prefix of them
    /// (the cells themselves included) as <c>G</c> terms, plus the <c>E</c> term (the field has a value).
    /// </summary>
    public static void SpatialTermsOf(IndexField field, IReadOnlyList<JsonElement> values, HashSet<(string Field, string Term)> into)
    {
        foreach (var v in values)
        {
            if (v.ValueKind != JsonValueKind.String || GeoShape.ParseWkt(v.GetString()!, plane: field.Plane) is not { } shape)
                continue;
            var cells = shape is GeoPoint p ? [GeoHash.Encode(p.Lat, p.Lng, GeoHash.MaxLevel)] : GeoHash.Cover(shape.Bounds, MaxGeoCells).Cells;
            foreach (string cell in cells)
            {
                into.Add((FieldName(field.Id, GeoCell), cell));
                for (int n = 1; n <= cell.Length; n++)
                    into.Add((FieldName(field.Id, GeoPrefix), cell[..n]));
            }
            into.Add((FieldName(field.Id, Exists), ""));
        }
    }

    /// <summary>
    /// The terms of one field kind in one segment, in order, from <paramref name="from"/> (default: the first) on,
    /// until a term no longer starts with <paramref name="fieldPrefix"/> or <paramref name="stop"/> says so: the
    /// enumerator is yielded positioned on each term (read <c>Term</c>, call <c>Docs</c>), valid until the next step.
    /// </summary>
    public static IEnumerable<Lucene.Net.Index.TermsEnum> SegmentTerms(Lucene.Net.Index.AtomicReader segment, Lucene.Net.Util.BytesRef fieldPrefix,
        Lucene.Net.Util.BytesRef? from = null, Func<Lucene.Net.Util.BytesRef, bool>? stop = null)
    {
        var terms = segment.GetTerms(TermsField);
        if (terms == null)
            yield break;
        var te = terms.GetEnumerator();
        if (te.SeekCeil(from ?? fieldPrefix) == Lucene.Net.Index.TermsEnum.SeekStatus.END)
            yield break;
        do
        {
            var term = te.Term;
            if (!Lucene.Net.Util.StringHelper.StartsWith(term, fieldPrefix) || (stop != null && stop(term)))
                yield break;
            yield return te;
        }
        while (te.MoveNext());
    }

    /// <summary>The number a <see cref="NumberTerm"/> text (16 hex digits, UTF-8) encodes.</summary>
    public static double NumberOfTerm(ReadOnlySpan<byte> term) => FromSortableBits((long)NumberBitsOfTerm(term) ^ long.MinValue);

    /// <summary>A <see cref="NumberTerm"/> text (16 hex digits, UTF-8) as the unsigned number it spells (<see cref="SortableBits"/> with the sign bit flipped).</summary>
    public static ulong NumberBitsOfTerm(ReadOnlySpan<byte> term)
    {
        ulong e = 0;
        foreach (byte b in term)
            e = (e << 4) | (uint)(b <= (byte)'9' ? b - '0' : (b | 0x20) - 'a' + 10);
        return e;
    }

    /// <summary>The (Lucene field, term) pairs one mapped field's values produce.</summary>
    public static void TermsOf(IndexField field, IReadOnlyList<JsonElement> values, HashSet<(string Field, string Term)> into)
    {
        if (field.Spatial)
        {
            SpatialTermsOf(field, values, into);
            return;
        }
        bool other = false;
        foreach (var v in values)
        {
            switch (v.ValueKind)
            {
                case JsonValueKind.String:
                    string s = v.GetString()!;
                    into.Add((FieldName(field.Id, Text), TextTerm(s)));
                    break;
                case JsonValueKind.Number:
                    into.Add((FieldName(field.Id, Number), NumberTerm(v.GetDouble())));
                    break;
                case JsonValueKind.True or JsonValueKind.False:
                    into.Add((FieldName(field.Id, Bool), v.ValueKind == JsonValueKind.True ? "1" : "0"));
                    break;
                case JsonValueKind.Null:
                    into.Add((FieldName(field.Id, Null), ""));
                    break;
                default:
                    other = true;
                    break;
            }
        }
        // Scalars are found by their own terms; an E term marks values that have none (objects).
        if (other)
            into.Add((FieldName(field.Id, Exists), ""));
    }
}
