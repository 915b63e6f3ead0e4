namespace RavenLite.Client.Linq;

/// <summary>Query-only operators for use inside <c>Where</c>; they translate to RQL and cannot run locally.</summary>
public static class RavenLinqExtensions
{
    /// <summary><c>x.Name.In(names)</c> → <c>Name in ($p)</c>.</summary>
    public static bool In<T>(this T field, IEnumerable<T> values) =>
        throw new NotSupportedException("In() is translated to RQL inside a RavenLite query and cannot run locally.");

    /// <summary><c>x.Bio.Search("fast database")</c> → <c>search(Bio, $p)</c>: analyzed full-text, any of the terms.</summary>
    public static bool Search(this string? field, string terms) =>
        throw new NotSupportedException("Search() is translated to RQL inside a RavenLite query and cannot run locally.");
}
