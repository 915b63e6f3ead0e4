namespace RavenLite.Server.Indexing;

/// <summary>
/// Geohash cells (the standard base-32 geohash: longitude and latitude bits interleaved, longitude first) —
/// the prefix-tree terms of spatial fields (docs/format/indexes.md). A cell of level L is a string of L
/// characters; its cells one level down are it plus one character; two cells overlap exactly when one is a
/// prefix of the other. <see cref="MaxLevel"/> cells are about 4.8 m × 4.8 m at the equator. Thread-safe.
/// </summary>
internal static class GeoHash
{
    /// <summary>Deepest level indexed: RavenDB's default geohash tree level (9).</summary>
    public const int MaxLevel = 9;

    private const string Alphabet = "0123456789bcdefghjkmnpqrstuvwxyz";

    /// <summary>The level-<paramref name="level"/> cell of a point.</summary>
    public static string Encode(double lat, double lng, int level)
    {
        var (lngBits, latBits) = Bits(level);
        long x = Index(lng, -180, 360, lngBits), y = Index(lat, -90, 180, latBits);
        return Cell(x, y, level);
    }

    /// <summary>
    /// The cells of the deepest level at which at most <paramref name="maxCells"/> cells cover the box (level 1
    /// when even that needs more), so a lookup stays small however large the shape.
    /// </summary>
    public static (int Level, List<string> Cells) Cover((double MinLat, double MaxLat, double MinLng, double MaxLng) box, int maxCells)
    {
        for (int level = MaxLevel; level >= 1; level--)
        {
            var (lngBits, latBits) = Bits(level);
            long x0 = Index(box.MinLng, -180, 360, lngBits), x1 = Index(box.MaxLng, -180, 360, lngBits);
            long y0 = Index(box.MinLat, -90, 180, latBits), y1 = Index(box.MaxLat, -90, 180, latBits);
            if ((x1 - x0 + 1) * (y1 - y0 + 1) > maxCells && level > 1)
                continue;
            var cells = new List<string>();
            for (long x = x0; x <= x1; x++)
                for (long y = y0; y <= y1; y++)
                    cells.Add(Cell(x, y, level));
            return (level, cells);
        }
        throw new InvalidOperationException("unreachable");
    }

    /// <summary>Longitude and latitude bits of a level (5 bits a character, longitude takes the odd one).</summary>
    private static (int Lng, int Lat) Bits(int level) => ((5 * level + 1) / 2, 5 * level / 2);

    private static long Index(double v, double min, double span, int bits)
    {
        long n = 1L << bits;
        return Math.Clamp((long)Math.Floor((v - min) / span * n), 0, n - 1);
    }

    private static string Cell(long x, long y, int level)
    {
        var (lngBits, latBits) = Bits(level);
        var sb = new StringBuilder(level);
        int value = 0, count = 0, xi = lngBits - 1, yi = latBits - 1;
        for (int bit = 0; bit < 5 * level; bit++)
        {
            long b = bit % 2 == 0 ? (x >> xi--) & 1 : (y >> yi--) & 1;
            value = (value << 1) | (int)b;
            if (++count == 5)
            {
                sb.Append(Alphabet[value]);
                value = count = 0;
            }
        }
        return sb.ToString();
    }
}
