using System.Collections.Concurrent;
using System.Runtime.Loader;
using System.Security.Cryptography;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;

namespace RavenLite.Server.Indexing.Analysis;

/// <summary>
/// Compiles the C# source of a custom analyzer (a Lucene.Net 4.8 <c>Analyzer</c>) or sorter (<see cref="CustomSorter"/>)
/// with Roslyn, against the assemblies the server runs with. Only administrators may send such code (operator or
/// database-admin routes, as RavenDB), so it is not sandboxed the way index code is. A type named as the definition
/// (else the only public type deriving from the base) is the one used. Compiled once per source text; each in its own
/// collectible load context. Errors are a 400 naming the line and column.
/// </summary>
internal static class CustomCodeCompiler
{
    private static readonly ConcurrentDictionary<string, Lazy<Type>> Cache = new();

    private static readonly Lazy<MetadataReference[]> References = new(() =>
        ((string?)AppContext.GetData("TRUSTED_PLATFORM_ASSEMBLIES") ?? "").Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries)
            .Append(typeof(CustomSorter).Assembly.Location).Distinct(StringComparer.Ordinal)
            .Where(File.Exists).Select(p => (MetadataReference)MetadataReference.CreateFromFile(p)).ToArray());

    /// <summary>The type the source of <paramref name="what"/> <paramref name="name"/> defines, deriving from <typeparamref name="TBase"/>.</summary>
    public static Type Compile<TBase>(string what, string name, string code)
    {
        string key = typeof(TBase).FullName + ":" + name + ":" + Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(code)));
        var lazy = Cache.GetOrAdd(key, _ => new Lazy<Type>(() => CompileNew<TBase>(what, name, code)));
        try
        {
            return lazy.Value;
        }
        catch
        {
            Cache.TryRemove(key, out _); // an error is not kept: the same text is checked again when sent again
            throw;
        }
    }

    private static Type CompileNew<TBase>(string what, string name, string code)
    {
        var tree = CSharpSyntaxTree.ParseText(code);
        var compilation = CSharpCompilation.Create($"{what}-{Guid.NewGuid():N}", [tree], References.Value,
            new CSharpCompilationOptions(OutputKind.DynamicallyLinkedLibrary, optimizationLevel: OptimizationLevel.Release, nullableContextOptions: NullableContextOptions.Disable));
        using var ms = new MemoryStream();
        var emitted = compilation.Emit(ms);
        if (!emitted.Success)
        {
            var error = emitted.Diagnostics.First(d => d.Severity == DiagnosticSeverity.Error);
            var at = error.Location.GetLineSpan().StartLinePosition;
            throw new BadRequestException($"Cannot compile {what} '{name}': line {at.Line + 1}, column {at.Character + 1}: {error.GetMessage(CultureInfo.InvariantCulture)}");
        }
        ms.Position = 0;
        var assembly = new AssemblyLoadContext($"{what}-{name}", isCollectible: true).LoadFromStream(ms);
        var candidates = assembly.GetExportedTypes().Where(t => !t.IsAbstract && typeof(TBase).IsAssignableFrom(t)).ToList();
        return candidates.FirstOrDefault(t => t.Name == name) ?? (candidates.Count == 1 ? candidates[0]
            : throw new BadRequestException($"The code of {what} '{name}' must define one public class deriving from {typeof(TBase).FullName} (named '{name}' when it defines several); it defines {candidates.Count}."));
    }
}
