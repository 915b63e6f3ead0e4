namespace RavenLite.Fuzz;

/// <summary>The fuzz targets by name (tools/fuzz.sh takes the same names; each has a seed corpus in corpus/NAME).</summary>
public static class FuzzTargets
{
    private static readonly Dictionary<string, Func<IFuzzTarget>> Factories = new(StringComparer.Ordinal)
    {
        ["rql"] = () => new Targets.RqlTarget(),
        ["document"] = () => new Targets.DocumentTarget(),
        ["bulk-insert"] = Targets.OperationBodyTarget.BulkInsert,
        ["bulk-docs"] = () => new Targets.BulkDocsTarget(),
        ["import"] = Targets.OperationBodyTarget.Import,
        ["index"] = () => new Targets.IndexTarget(),
        ["script"] = () => new Targets.ScriptTarget(),
        ["tcp"] = () => new Targets.TcpTarget(),
        ["storage"] = () => new Targets.StorageTarget(),
        ["restore"] = () => new Targets.RestoreTarget(),
    };

    /// <summary>Every target's name.</summary>
    public static IReadOnlyCollection<string> Names => Factories.Keys;

    /// <summary>A new instance of target <paramref name="name"/> (its server or files set up).</summary>
    public static IFuzzTarget Create(string name) =>
        Factories.TryGetValue(name, out var f) ? f() : throw new ArgumentException($"No fuzz target '{name}'; the targets are: {string.Join(", ", Names)}.");
}
