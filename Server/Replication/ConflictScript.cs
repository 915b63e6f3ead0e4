using Jint;
using Jint.Native;
using Jint.Native.Json;
using Jint.Native.Object;
using RavenLite.Server.Documents;
using RavenLite.Server.Indexing.Scripting;

namespace RavenLite.Server.Replication;

/// <summary>
/// A collection's conflict resolver script, as RavenDB runs it: <c>docs</c> is the array of the versions in conflict
/// (documents with their <c>@metadata</c>; deletes are left out), <c>resolveToTombstone()</c> resolves to a delete, and
/// the script returns the resolved document — or nothing, to leave the versions in conflict. A script that fails or
/// runs over its limits leaves them in conflict too.
/// </summary>
internal static class ConflictScript
{
    private const string Function = "__ravenlite_resolve";
    private const int MaxStatements = 100_000;
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(2);

    /// <summary>What a script decided.</summary>
    public sealed record Resolution(bool Resolved, byte[]? Json);

    /// <summary>400 (JavaScriptParseException) when <paramref name="script"/> does not parse.</summary>
    public static void Check(string collection, string script)
    {
        try
        {
            new Acornima.Parser().ParseScript(Wrap(script));
        }
        catch (Acornima.ParseErrorException e)
        {
            throw new BadRequestException($"The conflict resolver of collection '{collection}' does not parse: line {e.LineNumber - 1}, column {e.Column}: {e.Description}", RavenExceptionTypes.JavaScriptParse);
        }
    }

    private static string Wrap(string script) => $"function {Function}(docs) {{\n{script}\n}}";

    /// <summary>Runs <paramref name="script"/> over <paramref name="versions"/> of a document of <paramref name="collection"/>.</summary>
    public static Resolution Run(string script, string collection, IReadOnlyList<ConflictedVersion> versions)
    {
        var engine = JavaScriptIndex.CreateEngine(MaxStatements, Timeout);
        var tombstone = new JsObject(engine);
        engine.SetValue("resolveToTombstone", new Func<JsValue>(() => tombstone));
        try
        {
            engine.Execute(Wrap(script));
            var parser = new JsonParser(engine);
            var docs = versions.Where(v => v.Json != null).Select(v => parser.Parse(Encoding.UTF8.GetString(v.Json!))).ToArray();
            var result = engine.Invoke(Function, engine.Intrinsics.Array.Construct(docs));
            if (ReferenceEquals(result, tombstone))
                return new Resolution(true, null);
            if (result is not ObjectInstance resolved || result.IsArray())
                return new Resolution(false, null);
            // The resolved document stays in its collection unless the script names another.
            if (resolved.Get("@metadata") is not ObjectInstance metadata)
            {
                metadata = new JsObject(engine);
                resolved.Set("@metadata", metadata);
            }
            if (metadata.Get("@collection").IsUndefined())
                metadata.Set("@collection", collection);
            return new Resolution(true, Encoding.UTF8.GetBytes(new Jint.Native.Json.JsonSerializer(engine).Serialize(resolved).AsString()));
        }
        catch (Exception e) when (e is Jint.Runtime.JavaScriptException or Jint.Runtime.StatementsCountOverflowException or TimeoutException
            or Jint.Runtime.RecursionDepthOverflowException or Jint.Runtime.MemoryLimitExceededException or ArgumentException)
        {
            return new Resolution(false, null);
        }
    }
}
