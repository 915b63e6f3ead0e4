namespace RavenLite.Server.Documents;

/// <summary>
/// The <c>matches</c>/<c>exclude</c> patterns of loadStartingWith, as RavenDB reads them: alternatives
/// separated by <c>|</c>, each matched against the whole id tail (the part after the prefix), ignoring
/// case, where <c>*</c> stands for any run of characters and <c>?</c> for exactly one. Matching is the
/// linear two-pointer glob walk (no regular expressions, no exponential backtracking). Immutable.
/// </summary>
public sealed class IdPattern
{
    private readonly string[] _alternatives;

    private IdPattern(string[] alternatives) => _alternatives = alternatives;

    /// <summary>The pattern of <paramref name="text"/>, or null when it is absent or empty (everything matches).</summary>
    public static IdPattern? Parse(string? text) =>
        string.IsNullOrEmpty(text) ? null : new IdPattern(text.Split('|', StringSplitOptions.RemoveEmptyEntries));

    /// <summary>True when one of the alternatives matches all of <paramref name="tail"/>.</summary>
    public bool IsMatch(string tail)
    {
        foreach (string alternative in _alternatives)
            if (Glob(alternative, tail))
                return true;
        return false;
    }

    private static bool Glob(string pattern, string text)
    {
        int p = 0, t = 0, star = -1, resume = 0;
        while (t < text.Length)
        {
            if (p < pattern.Length && (pattern[p] == '?' || char.ToLowerInvariant(pattern[p]) == char.ToLowerInvariant(text[t])))
            {
                p++;
                t++;
            }
            else if (p < pattern.Length && pattern[p] == '*')
            {
                star = p++;
                resume = t;
            }
            else if (star >= 0)
            {
                p = star + 1;
                t = ++resume;
            }
            else
            {
                return false;
            }
        }
        while (p < pattern.Length && pattern[p] == '*')
            p++;
        return p == pattern.Length;
    }
}
