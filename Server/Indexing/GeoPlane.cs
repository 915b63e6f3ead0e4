namespace RavenLite.Server.Indexing;

/// <summary>
/// A Cartesian spatial field's plane (field option <c>Spatial: {Type: "Cartesian", MinX, MaxX, MinY, MaxY}</c>, RavenDB's
/// defaults -180..180 × -90..90). Its shapes are kept as <see cref="GeoShape"/>s whose longitude and latitude are x and y
/// scaled onto -180..180 and -90..90, so the geohash cells that find candidates cover them as they cover geographic ones;
/// point-in-polygon and edge tests are linear, so they hold under that scaling, and distances (circles, ordering) are
/// Euclidean, in the plane's own units, computed from the coordinates scaled back.
/// </summary>
internal sealed record GeoPlane(double MinX, double MaxX, double MinY, double MaxY)
{
    /// <summary>A plane wide enough for any coordinates index code may give: for checking that WKT is well formed.</summary>
    public static readonly GeoPlane Unbounded = new(-1e15, 1e15, -1e15, 1e15);

    /// <summary>The stored (longitude-latitude) form of plane point (<paramref name="x"/>, <paramref name="y"/>); null outside the plane.</summary>
    public GeoPoint? ToGeo(double x, double y) =>
        x >= MinX && x <= MaxX && y >= MinY && y <= MaxY
            ? GeoPoint.Create(-90 + (y - MinY) / (MaxY - MinY) * 180, -180 + (x - MinX) / (MaxX - MinX) * 360)
            : null;

    /// <summary>The plane coordinates of a stored point.</summary>
    public (double X, double Y) ToPlane(double lat, double lng) => (MinX + (lng + 180) / 360 * (MaxX - MinX), MinY + (lat + 90) / 180 * (MaxY - MinY));

    /// <summary>The Euclidean distance between two stored points, in plane units.</summary>
    public double Distance(GeoPoint a, GeoPoint b)
    {
        var (ax, ay) = ToPlane(a.Lat, a.Lng);
        var (bx, by) = ToPlane(b.Lat, b.Lng);
        return Math.Sqrt((ax - bx) * (ax - bx) + (ay - by) * (ay - by));
    }

    /// <summary>The field option's plane, or null for a geographic field; 400 for bounds that are not a plane.</summary>
    public static GeoPlane? Of(string field, JsonElement spatial)
    {
        if (!spatial.TryGetProperty("Type", out var type) || type.ValueKind != JsonValueKind.String || type.GetString() != "Cartesian")
            return null;
        double Bound(string name, double fallback) => spatial.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.Number ? v.GetDouble() : fallback;
        var plane = new GeoPlane(Bound("MinX", -180), Bound("MaxX", 180), Bound("MinY", -90), Bound("MaxY", 90));
        if (!(plane.MaxX > plane.MinX) || !(plane.MaxY > plane.MinY) || !double.IsFinite(plane.MaxX - plane.MinX) || !double.IsFinite(plane.MaxY - plane.MinY))
            throw new IndexCompilationException($"Field '{field}': a Cartesian field's MinX..MaxX and MinY..MaxY must each be a range of finite numbers.", "Fields", field);
        return plane;
    }
}
