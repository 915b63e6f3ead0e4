using System.Text.RegularExpressions;

namespace RavenLite.Server.Indexing;

/// <summary>
/// A geographic shape of spatial fields and spatial queries (Lucene.Net.Spatial is not served, so
/// this is ours, kept small): a point, a polygon (outer ring and holes) or a circle (centre and radius in
/// kilometres). Coordinates are degrees; WKT gives longitude first (<c>POINT (lng lat)</c>). Distances between
/// points are haversine great-circle distances on a sphere of RavenDB's mean Earth radius
/// (<see cref="EarthRadiusKm"/>). Relations that involve edges (a polygon's edges against a circle or
/// another polygon) are computed on straight edges in longitude/latitude, with circle distances in a local
/// equirectangular projection around the centre — exact for points, close for small shapes; shapes that
/// cross the antimeridian are not supported. Immutable; thread-safe.
/// </summary>
internal abstract partial class GeoShape
{
    /// <summary>RavenDB's (Spatial4n's) mean Earth radius, kilometres.</summary>
    public const double EarthRadiusKm = 6371.0087714;

    /// <summary>Kilometres in a mile.</summary>
    public const double KmPerMile = 1.609344;

    /// <summary>Bounding box: min/max latitude and longitude, degrees.</summary>
    public abstract (double MinLat, double MaxLat, double MinLng, double MaxLng) Bounds { get; }

    /// <summary>A point to measure distances from (a polygon's bounding-box centre).</summary>
    public abstract GeoPoint Center { get; }

    /// <summary>True when the two shapes share any point.</summary>
    public abstract bool Intersects(GeoShape other);

    /// <summary>True when this shape lies entirely inside <paramref name="other"/>.</summary>
    public abstract bool IsWithin(GeoShape other);

    /// <summary>True when <paramref name="other"/> lies entirely inside this shape.</summary>
    public bool Contains(GeoShape other) => other.IsWithin(this);

    /// <summary>Great-circle distance between two points, kilometres.</summary>
    public static double Haversine(double lat1, double lng1, double lat2, double lng2)
    {
        double dLat = Rad(lat2 - lat1), dLng = Rad(lng2 - lng1);
        double a = Math.Sin(dLat / 2) * Math.Sin(dLat / 2) + Math.Cos(Rad(lat1)) * Math.Cos(Rad(lat2)) * Math.Sin(dLng / 2) * Math.Sin(dLng / 2);
        return 2 * EarthRadiusKm * Math.Asin(Math.Min(1, Math.Sqrt(a)));
    }

    internal static double Rad(double degrees) => degrees * Math.PI / 180;

    /// <summary>The distance between two points: great-circle kilometres, or Euclidean in <paramref name="plane"/>'s units.</summary>
    public static double Distance(GeoPoint a, GeoPoint b, GeoPlane? plane) => plane?.Distance(a, b) ?? Haversine(a.Lat, a.Lng, b.Lat, b.Lng);

    /// <summary>The shape's bounding box as a polygon (a field or query under the BoundingBox strategy relates boxes only).</summary>
    public GeoShape Box()
    {
        var (minLat, maxLat, minLng, maxLng) = Bounds;
        return new GeoPolygon([[(minLat, minLng), (minLat, maxLng), (maxLat, maxLng), (maxLat, minLng), (minLat, minLng)]]);
    }

    /// <summary>
    /// Parses WKT: <c>POINT (lng lat)</c>, <c>POLYGON ((lng lat, ..), (hole..))</c>, <c>LINESTRING (lng lat, ..)</c> or
    /// RavenDB's <c>CIRCLE (lng lat d=radius)</c> (the radius in kilometres times <paramref name="kmPerUnit"/>), any case; null
    /// when it does not parse.
    /// </summary>
    /// <param name="wkt">The text.</param>
    /// <param name="kmPerUnit">Kilometres per unit of a CIRCLE's radius (geographic shapes).</param>
    /// <param name="plane">For a Cartesian field: coordinates are x y of that plane, a radius in its units; null: longitude latitude.</param>
    public static GeoShape? ParseWkt(string wkt, double kmPerUnit = 1, GeoPlane? plane = null)
    {
        var m = WktPattern().Match(wkt);
        if (!m.Success)
            return null;
        string body = m.Groups[2].Value.Trim();
        try
        {
            switch (m.Groups[1].Value.ToUpperInvariant())
            {
                case "POINT":
                {
                    var c = Coordinates(body, plane);
                    return c.Count == 1 ? GeoPoint.Create(c[0].Lat, c[0].Lng) : null;
                }
                case "POLYGON":
                {
                    var rings = RingPattern().Matches(body).Select(r => Coordinates(r.Groups[1].Value, plane)).ToList();
                    if (rings.Count == 0 || rings.Any(r => r.Count < 4 || r[0] != r[^1]))
                        return null; // a ring is closed: at least 3 corners and the first again
                    return new GeoPolygon(rings);
                }
                case "LINESTRING":
                {
                    var line = Coordinates(body, plane);
                    return line.Count >= 2 ? new GeoPolygon([line], line: true) : null;
                }
                case "CIRCLE":
                {
                    var circle = CirclePattern().Match(body);
                    if (!circle.Success)
                        return null;
                    var center = Coordinates(circle.Groups[1].Value, plane);
                    double radius = double.Parse(circle.Groups[2].Value, NumberStyles.Float, CultureInfo.InvariantCulture);
                    return center.Count == 1 && radius >= 0 && GeoPoint.Create(center[0].Lat, center[0].Lng) is { } c
                        ? new GeoCircle(c, plane == null ? radius * kmPerUnit : radius, plane) : null;
                }
                default:
                    return null;
            }
        }
        catch (FormatException)
        {
            return null;
        }
    }

    private static List<(double Lat, double Lng)> Coordinates(string text, GeoPlane? plane)
    {
        var result = new List<(double, double)>();
        foreach (string pair in text.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries))
        {
            var xy = pair.Split(' ', StringSplitOptions.RemoveEmptyEntries);
            if (xy.Length != 2)
                throw new FormatException(pair);
            double lng = double.Parse(xy[0], NumberStyles.Float, CultureInfo.InvariantCulture);
            double lat = double.Parse(xy[1], NumberStyles.Float, CultureInfo.InvariantCulture);
            if (plane != null)
            {
                var onPlane = plane.ToGeo(lng, lat) ?? throw new FormatException(pair); // x y, within the plane
                (lat, lng) = (onPlane.Lat, onPlane.Lng);
            }
            if (lat is < -90 or > 90 || lng is < -180 or > 180)
                throw new FormatException(pair);
            result.Add((lat, lng));
        }
        return result;
    }

    [GeneratedRegex(@"^\s*(POINT|POLYGON|LINESTRING|CIRCLE)\s*\((.*)\)\s*$", RegexOptions.IgnoreCase | RegexOptions.Singleline)]
    private static partial Regex WktPattern();

    [GeneratedRegex(@"^([^d]*?)\s+d\s*=\s*(\S+)$", RegexOptions.IgnoreCase)]
    private static partial Regex CirclePattern();

    [GeneratedRegex(@"\(([^()]*)\)")]
    private static partial Regex RingPattern();
}

/// <summary>A point (degrees).</summary>
internal sealed class GeoPoint : GeoShape
{
    private GeoPoint(double lat, double lng)
    {
        Lat = lat;
        Lng = lng;
    }

    public double Lat { get; }

    public double Lng { get; }

    /// <summary>A point; null when a coordinate is out of range or not a number.</summary>
    public static GeoPoint? Create(double lat, double lng) =>
        double.IsFinite(lat) && double.IsFinite(lng) && lat is >= -90 and <= 90 && lng is >= -180 and <= 180 ? new GeoPoint(lat, lng) : null;

    public override (double MinLat, double MaxLat, double MinLng, double MaxLng) Bounds => (Lat, Lat, Lng, Lng);

    public override GeoPoint Center => this;

    public override bool Intersects(GeoShape other) => other switch
    {
        GeoPoint p => p.Lat == Lat && p.Lng == Lng,
        GeoCircle c => c.Holds(this),
        GeoPolygon g => g.Holds(Lat, Lng),
        _ => false,
    };

    public override bool IsWithin(GeoShape other) => Intersects(other);

    /// <summary>WKT of the point.</summary>
    public string ToWkt() => string.Create(CultureInfo.InvariantCulture, $"POINT ({Lng:R} {Lat:R})");
}

/// <summary>A circle: centre and radius in kilometres (on a Cartesian <c>plane</c>: in its units, distances Euclidean).</summary>
internal sealed class GeoCircle(GeoPoint center, double radiusKm, GeoPlane? plane = null) : GeoShape
{
    public double RadiusKm { get; } = radiusKm;

    public override GeoPoint Center { get; } = center;

    /// <summary>The distance between two points: great-circle kilometres, or Euclidean on the circle's plane.</summary>
    private double Distance(GeoPoint a, GeoPoint b) => Distance(a, b, plane);

    public override (double MinLat, double MaxLat, double MinLng, double MaxLng) Bounds
    {
        get
        {
            if (plane != null)
            {
                var (x, y) = plane.ToPlane(Center.Lat, Center.Lng);
                var low = plane.ToGeo(Math.Max(plane.MinX, x - RadiusKm), Math.Max(plane.MinY, y - RadiusKm))!;
                var high = plane.ToGeo(Math.Min(plane.MaxX, x + RadiusKm), Math.Min(plane.MaxY, y + RadiusKm))!;
                return (low.Lat, high.Lat, low.Lng, high.Lng);
            }
            double dLat = RadiusKm / EarthRadiusKm * 180 / Math.PI;
            double minLat = Center.Lat - dLat, maxLat = Center.Lat + dLat;
            if (minLat <= -90 || maxLat >= 90)
                return (Math.Max(-90, minLat), Math.Min(90, maxLat), -180, 180); // around a pole: every longitude
            double dLng = dLat / Math.Cos(Rad(Center.Lat));
            double minLng = Center.Lng - dLng, maxLng = Center.Lng + dLng;
            if (minLng < -180 || maxLng > 180)
                return (minLat, maxLat, -180, 180); // across the antimeridian: every longitude (a superset)
            return (minLat, maxLat, minLng, maxLng);
        }
    }

    public bool Holds(GeoPoint p) => Distance(Center, p) <= RadiusKm;

    /// <summary>A point in kilometres east/north of the centre (equirectangular, for edge distances; on a plane, its units).</summary>
    public (double X, double Y) Project(double lat, double lng)
    {
        if (plane == null)
            return (Rad(lng - Center.Lng) * Math.Cos(Rad(Center.Lat)) * EarthRadiusKm, Rad(lat - Center.Lat) * EarthRadiusKm);
        var (x, y) = plane.ToPlane(lat, lng);
        var (cx, cy) = plane.ToPlane(Center.Lat, Center.Lng);
        return (x - cx, y - cy);
    }

    public override bool Intersects(GeoShape other) => other switch
    {
        GeoPoint p => Holds(p),
        GeoCircle c => Distance(Center, c.Center) <= RadiusKm + c.RadiusKm,
        GeoPolygon g => g.Intersects(this),
        _ => false,
    };

    public override bool IsWithin(GeoShape other) => other switch
    {
        GeoPoint => false,
        GeoCircle c => Distance(Center, c.Center) + RadiusKm <= c.RadiusKm,
        GeoPolygon g => g.Holds(Center.Lat, Center.Lng) && g.EdgeDistanceKm(this) >= RadiusKm,
        _ => false,
    };
}

/// <summary>
/// A polygon (an outer ring and holes) or, <c>line</c>, a line string (no inside: it holds only the points on it); straight
/// edges in longitude/latitude.
/// </summary>
internal sealed class GeoPolygon : GeoShape
{
    private readonly List<List<(double Lat, double Lng)>> _rings;
    private readonly bool _line;

    public GeoPolygon(List<List<(double Lat, double Lng)>> rings, bool line = false)
    {
        _rings = rings;
        _line = line;
        var outer = rings[0];
        Bounds = (outer.Min(p => p.Lat), outer.Max(p => p.Lat), outer.Min(p => p.Lng), outer.Max(p => p.Lng));
        Center = GeoPoint.Create((Bounds.MinLat + Bounds.MaxLat) / 2, (Bounds.MinLng + Bounds.MaxLng) / 2)!;
    }

    public override (double MinLat, double MaxLat, double MinLng, double MaxLng) Bounds { get; }

    public override GeoPoint Center { get; }

    private IEnumerable<(double Lat, double Lng)> Vertices => _rings.SelectMany(r => r);

    private IEnumerable<((double Lat, double Lng) A, (double Lat, double Lng) B)> Edges =>
        _rings.SelectMany(r => r.Zip(r.Skip(1)));

    /// <summary>Inside the outer ring and outside every hole (even-odd rule over all rings); edges count as inside. A line holds its points.</summary>
    public bool Holds(double lat, double lng)
    {
        bool inside = false;
        foreach (var (a, b) in Edges)
        {
            if (OnSegment(a, b, (lat, lng)))
                return true;
            if (_line)
                continue;
            if ((a.Lat > lat) != (b.Lat > lat) && lng < (b.Lng - a.Lng) * (lat - a.Lat) / (b.Lat - a.Lat) + a.Lng)
                inside = !inside;
        }
        return inside;
    }

    /// <summary>The least distance from the circle's centre to an edge, kilometres (local projection).</summary>
    public double EdgeDistanceKm(GeoCircle c)
    {
        double best = double.PositiveInfinity;
        foreach (var (a, b) in Edges)
        {
            var (ax, ay) = c.Project(a.Lat, a.Lng);
            var (bx, by) = c.Project(b.Lat, b.Lng);
            double dx = bx - ax, dy = by - ay, len = dx * dx + dy * dy;
            double t = len == 0 ? 0 : Math.Clamp(-(ax * dx + ay * dy) / len, 0, 1);
            double x = ax + t * dx, y = ay + t * dy;
            best = Math.Min(best, Math.Sqrt(x * x + y * y));
        }
        return best;
    }

    public override bool Intersects(GeoShape other) => other switch
    {
        GeoPoint p => Holds(p.Lat, p.Lng),
        GeoCircle c => Holds(c.Center.Lat, c.Center.Lng) || EdgeDistanceKm(c) <= c.RadiusKm,
        GeoPolygon g => Vertices.Any(v => g.Holds(v.Lat, v.Lng)) || g.Vertices.Any(v => Holds(v.Lat, v.Lng)) || EdgesCross(g),
        _ => false,
    };

    public override bool IsWithin(GeoShape other) => other switch
    {
        GeoPoint => false,
        GeoCircle c => Vertices.All(v => c.Holds(GeoPoint.Create(v.Lat, v.Lng)!)),
        GeoPolygon g => Vertices.All(v => g.Holds(v.Lat, v.Lng)) && !EdgesCross(g),
        _ => false,
    };

    /// <summary>True when an edge of this polygon properly crosses an edge of <paramref name="g"/>.</summary>
    private bool EdgesCross(GeoPolygon g)
    {
        foreach (var (a, b) in Edges)
            foreach (var (c, d) in g.Edges)
                if (Orientation(a, b, c) * Orientation(a, b, d) < 0 && Orientation(c, d, a) * Orientation(c, d, b) < 0)
                    return true;
        return false;
    }

    private static int Orientation((double Lat, double Lng) a, (double Lat, double Lng) b, (double Lat, double Lng) c) =>
        Math.Sign((b.Lng - a.Lng) * (c.Lat - a.Lat) - (b.Lat - a.Lat) * (c.Lng - a.Lng));

    private static bool OnSegment((double Lat, double Lng) a, (double Lat, double Lng) b, (double Lat, double Lng) p) =>
        Orientation(a, b, p) == 0 && p.Lat >= Math.Min(a.Lat, b.Lat) && p.Lat <= Math.Max(a.Lat, b.Lat) && p.Lng >= Math.Min(a.Lng, b.Lng) && p.Lng <= Math.Max(a.Lng, b.Lng);
}
