using System.Collections.Concurrent;
using System.Reflection;
using System.Runtime.Loader;
using System.Security.Cryptography;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;
using Microsoft.CodeAnalysis.CSharp.Syntax;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>A compiled C# index: its maps and, for a map-reduce index, its reduce.</summary>
internal sealed record CompiledCSharp(IReadOnlyList<CompiledMap> Maps, CompiledReduce? Reduce)
{
    /// <summary>Loaded from <see cref="CSharpIndexCompiler.DiskCache"/> rather than compiled by this process.</summary>
    public bool FromDisk { get; init; }
}

/// <summary>A compiled reduce: over map results of one key; the key of a map result; the fields of its results.</summary>
internal sealed record CompiledReduce(Func<IEnumerable<dynamic>, System.Collections.IEnumerable> Run, Func<dynamic, object> Key, IReadOnlyList<string> Fields);

/// <summary>
/// One compiled map: its collection, the fields its entries have (in order), which of them are spatial, and the
/// top-level document properties it reads (null: it may use a document whole; see <see cref="CSharpIndexCompiler.DocumentReads"/>).
/// </summary>
internal sealed record CompiledMap(string Collection, Func<IEnumerable<dynamic>, System.Collections.IEnumerable> Run, IReadOnlyList<string> Fields, IReadOnlySet<string> SpatialFields,
    IReadOnlySet<string>? Reads);

/// <summary>
/// Compiles C# index maps with Roslyn, as RavenDB does. Each map (<c>from o in docs.Orders ... select new { ... }</c>
/// or <c>docs.Orders.Select(o =&gt; new { ... })</c>) becomes a lambda over the collection's documents as
/// <c>IEnumerable&lt;dynamic&gt;</c> in a class derived from <see cref="CSharpIndexScript"/>. Documents are dynamic
/// (<see cref="DynamicJson"/>); where C# cannot bind LINQ over dynamic values the code is rewritten to
/// <see cref="DynamicLinq"/> (repeated until it binds). Before it is emitted, every symbol the code names must be on an
/// allow-list (text, numbers, dates, Math, LINQ, collections, regular expressions, the index functions) and a few
/// syntax forms are refused (typeof, loops, unsafe code, delegates invoked by name), so index code cannot reach the
/// file system, network, processes, reflection, threads or the server. Compiled indexes are cached by the hash of
/// their text; an error is a 400 IndexCompilationException naming the map, line and column.
/// </summary>
internal static class CSharpIndexCompiler
{
    private const string PositionAnnotation = "ravenlite-pos";
    private const string Scripting = "global::RavenLite.Server.Indexing.Scripting";

    private static readonly ConcurrentDictionary<string, Lazy<CompiledCSharp>> Cache = new();

    private static readonly Lazy<MetadataReference[]> References = new(() =>
    {
        string runtime = Path.GetDirectoryName(typeof(object).Assembly.Location)!;
        var names = new[] { "System.Private.CoreLib.dll", "System.Runtime.dll", "System.Linq.dll", "System.Collections.dll", "Microsoft.CSharp.dll",
            "System.Linq.Expressions.dll", "System.Text.RegularExpressions.dll", "System.Runtime.Extensions.dll", "netstandard.dll", "System.ObjectModel.dll" };
        return names.Select(n => Path.Combine(runtime, n)).Where(File.Exists).Select(p => (MetadataReference)MetadataReference.CreateFromFile(p))
            .Append(MetadataReference.CreateFromFile(typeof(CSharpIndexScript).Assembly.Location)).ToArray();
    });

    /// <summary>
    /// The runtime assemblies an index names (AdditionalAssemblies): <c>{name}.dll</c> of the running .NET; a name that is
    /// not one is RavenDB's 400 "Cannot load assembly".
    /// </summary>
    private static MetadataReference[] RuntimeReferences(IReadOnlyList<string> names)
    {
        string runtime = Path.GetDirectoryName(typeof(object).Assembly.Location)!;
        return names.Select(name =>
        {
            string path = Path.Combine(runtime, name + ".dll");
            if (name.IndexOfAny(['/', '\\']) >= 0 || !File.Exists(path))
                throw new IndexCompilationException($"Cannot load assembly '{name}'. Could not load file or assembly '{name}': it is not an assembly of the .NET runtime.", "AdditionalAssemblies", name);
            return (MetadataReference)MetadataReference.CreateFromFile(path);
        }).ToArray();
    }

    /// <summary>
    /// Where compiled indexes are kept across restarts (<c>{DataDir}/System/CompiledIndexes</c>, set at start-up), or null.
    /// Roslyn takes seconds per index on a small machine (7 s for the first one in a process here), so a restart would
    /// otherwise wait that long per C# index before the database answers. An entry is the emitted assembly and what
    /// the compiler learnt about it (fields, spatial fields, properties read), named by the hash of the index text and of this server
    /// build, so a changed index or an upgraded server compiles afresh. Best effort: an entry that cannot be written or
    /// read is compiled again. The assembly was checked against the sandbox rules when it was compiled; whoever can
    /// write the data directory can change the server's files anyway.
    /// </summary>
    public static string? DiskCache { get; set; }

    private static readonly string BuildId = typeof(CSharpIndexScript).Assembly.ManifestModule.ModuleVersionId.ToString("N");

    /// <summary>The compiled maps (and reduce) of a definition (from the cache when the same text was compiled before).</summary>
    public static CompiledCSharp Compile(IReadOnlyList<string> maps, string? reduce = null, IReadOnlyList<string>? additionalSources = null, string? diskCache = null,
        IReadOnlyList<string>? assemblies = null)
    {
        diskCache ??= DiskCache;
        additionalSources ??= [];
        assemblies ??= [];
        string key = Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(string.Join("\u0000", maps) + "\u0001" + reduce + "\u0002" + string.Join("\u0000", additionalSources)
            + "\u0004" + string.Join("\u0000", assemblies) + "\u0003" + BuildId)));
        var lazy = Cache.GetOrAdd(key, _ => new Lazy<CompiledCSharp>(() => LoadCached(diskCache, key, maps.Count, reduce != null) ?? CompileNew(diskCache, key, maps, reduce, additionalSources, RuntimeReferences(assemblies))));
        try
        {
            return lazy.Value;
        }
        catch
        {
            Cache.TryRemove(key, out _); // errors are not cached
            throw;
        }
    }

    /// <summary>What the disk cache keeps beside an assembly.</summary>
    private sealed record CachedShape(List<List<string>> Fields, List<List<string>> Spatial, List<List<string>?>? Reads);

    private static string? CachePath(string? dir, string key) => dir != null ? Path.Combine(dir, key[..32] + ".index") : null;

    /// <summary>Forgets what this process compiled (tests: as a new process would start).</summary>
    internal static void ForgetCompiled() => Cache.Clear();

    /// <summary>The index of this key from the disk cache, or null (none, unreadable, or not of this shape).</summary>
    private static CompiledCSharp? LoadCached(string? dir, string key, int mapCount, bool hasReduce)
    {
        if (CachePath(dir, key) is not { } path || !File.Exists(path))
            return null;
        try
        {
            byte[] bytes = File.ReadAllBytes(path);
            int shapeLength = System.Buffers.Binary.BinaryPrimitives.ReadInt32LittleEndian(bytes);
            var shape = System.Text.Json.JsonSerializer.Deserialize<CachedShape>(bytes.AsSpan(4, shapeLength));
            if (shape == null || shape.Spatial.Count != mapCount || shape.Fields.Count != mapCount + (hasReduce ? 1 : 0))
                return null;
            if (shape.Reads is { } r && r.Count != mapCount)
                return null;
            var reads = shape.Reads?.Select(r => r?.ToHashSet(StringComparer.Ordinal)).ToList() ?? Enumerable.Repeat<HashSet<string>?>(null, mapCount).ToList();
            return Load(new MemoryStream(bytes, 4 + shapeLength, bytes.Length - 4 - shapeLength), shape.Fields, shape.Spatial.Select(s => s.ToHashSet(StringComparer.Ordinal)).ToList(), reads, mapCount, hasReduce) with { FromDisk = true };
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or System.Text.Json.JsonException or BadImageFormatException or ArgumentException or InvalidCastException or NullReferenceException or IndexOutOfRangeException)
        {
            return null; // compiled again (and the entry rewritten)
        }
    }

    /// <summary>Writes an entry (atomically: a temporary file renamed); a failure only costs the next start a compile.</summary>
    private static void StoreCached(string? dir, string key, byte[] assembly, List<IReadOnlyList<string>> fields, List<HashSet<string>> spatial, List<HashSet<string>?> reads)
    {
        if (CachePath(dir, key) is not { } path)
            return;
        try
        {
            Directory.CreateDirectory(Path.GetDirectoryName(path)!);
            byte[] shape = System.Text.Json.JsonSerializer.SerializeToUtf8Bytes(new CachedShape(fields.Select(f => f.ToList()).ToList(), spatial.Select(s => s.Order(StringComparer.Ordinal).ToList()).ToList(),
                reads.Select(r => r?.Order(StringComparer.Ordinal).ToList()).ToList()));
            string temp = path + "." + Guid.NewGuid().ToString("N") + ".tmp";
            using (var f = File.Create(temp))
            {
                Span<byte> length = stackalloc byte[4];
                System.Buffers.Binary.BinaryPrimitives.WriteInt32LittleEndian(length, shape.Length);
                f.Write(length);
                f.Write(shape);
                f.Write(assembly);
            }
            File.Move(temp, path, overwrite: true);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
        }
    }

    /// <summary>Loads an emitted index assembly into its own collectible context and wraps its maps and reduce.</summary>
    private static CompiledCSharp Load(Stream assemblyBytes, IReadOnlyList<IReadOnlyList<string>> fields, List<HashSet<string>> spatial, List<HashSet<string>?> reads, int mapCount, bool hasReduce)
    {
        var assembly = new AssemblyLoadContext("index-" + Guid.NewGuid().ToString("N"), isCollectible: true).LoadFromStream(assemblyBytes);
        var script = (CSharpIndexScript)Activator.CreateInstance(assembly.GetType("GeneratedIndex")!)!;
        if (script.Maps.Count != mapCount)
            throw new InvalidCastException($"the assembly has {script.Maps.Count} maps, not {mapCount}");
        var compiledMaps = script.Maps.Select((x, i) => new CompiledMap(x.Collection, x.Map, fields[i], spatial[i], reads[i])).ToList();
        var compiledReduce = !hasReduce ? null : new CompiledReduce(script.Reduce!, script.ReduceKey!, fields[mapCount]);
        return new CompiledCSharp(compiledMaps, compiledReduce);
    }

    // Kept whole: one Roslyn compilation from source text to a loaded assembly (or its disk cache), diagnostics
    // mapped back to the definition's text at each step.
    private static CompiledCSharp CompileNew(string? diskCache, string key, IReadOnlyList<string> maps, string? reduce, IReadOnlyList<string> additionalSources, MetadataReference[] extra)
    {
        // Additional sources: C# classes the maps may call (checked like index code).
        var sourceTrees = new List<SyntaxTree>();
        foreach (string source in additionalSources)
        {
            var sourceTree = CSharpSyntaxTree.ParseText(source);
            if (sourceTree.GetDiagnostics().FirstOrDefault(d => d.Severity == DiagnosticSeverity.Error) is { } bad)
            {
                var at = bad.Location.GetLineSpan().StartLinePosition;
                throw new IndexCompilationException($"Additional source, line {at.Line + 1}, column {at.Character + 1}: {bad.GetMessage(System.Globalization.CultureInfo.InvariantCulture)}", "AdditionalSources", source);
            }
            sourceTrees.Add(sourceTree);
        }
        var bodies = new List<ExpressionSyntax>();
        var texts = new List<string>();
        var collections = new List<string>();
        var spatial = new List<HashSet<string>>();
        var reads = new List<HashSet<string>?>();
        for (int m = 0; m < maps.Count; m++)
        {
            string text = maps[m].Trim().TrimEnd(';').TrimEnd();
            texts.Add(text);
            var parsed = RewriteBoosts(Parse(m, text, maps.Count));
            var sources = parsed.DescendantNodesAndSelf().Where(IsDocsCollection).ToList();
            var names = sources.Select(CollectionName).Distinct(StringComparer.OrdinalIgnoreCase).ToList();
            // counters.Companies[.Likes] / timeSeries.Companies[.HeartRate]: the map reads items, not documents.
            var items = parsed.DescendantNodesAndSelf().Select(ItemSource).OfType<(SyntaxNode Top, IndexSource Source)>().ToList();
            if (items.Count > 0)
            {
                if (names.Count > 0 || items.Select(i => i.Source).Distinct().Count() > 1)
                    throw Error(m, text, 0, "a map reads one source: documents (docs.Orders), counters (counters.Companies.Likes) or time series (timeSeries.Companies.HeartRate)", maps.Count);
                collections.Add(items[0].Source.Encode());
                parsed = parsed.ReplaceNodes(items.Select(i => i.Top), (_, r) => SyntaxFactory.IdentifierName("docs").WithTriviaFrom(r).WithAdditionalAnnotations(r.GetAnnotations(PositionAnnotation)));
                spatial.Add([]);
                reads.Add(null);
                bodies.Add(parsed);
                continue;
            }
            // from doc in docs / docs.Select(doc => ..): every document, whatever its collection.
            if (names.Count == 0 && parsed.DescendantNodesAndSelf().OfType<IdentifierNameSyntax>().Any(n => n.Identifier.Text == "docs" && !(n.Parent is MemberAccessExpressionSyntax access && access.Name == n)))
                names.Add(CompiledIndex.AllDocuments);
            if (names.Count != 1)
                throw Error(m, text, 0, names.Count == 0
                    ? "a map reads one collection: from o in docs.Orders select new { ... } or docs.Orders.Select(o => new { ... })"
                    : $"a map reads one collection, this one reads {string.Join(", ", names)}", maps.Count);
            collections.Add(names[0]);
            parsed = parsed.ReplaceNodes(sources, (_, r) => SyntaxFactory.IdentifierName("docs").WithTriviaFrom(r).WithAdditionalAnnotations(r.GetAnnotations(PositionAnnotation)));
            spatial.Add(parsed.DescendantNodes().OfType<AnonymousObjectMemberDeclaratorSyntax>()
                .Where(d => d.Expression is InvocationExpressionSyntax { Expression: IdentifierNameSyntax { Identifier.Text: "CreateSpatialField" } })
                .Select(d => d.NameEquals?.Name.Identifier.Text ?? "").Where(n => n.Length > 0).ToHashSet(StringComparer.Ordinal));
            reads.Add(DocumentReads(parsed));
            bodies.Add(parsed);
        }
        string? keyVariable = null;
        if (reduce != null)
        {
            // The reduce (over 'results'), then its group-by key as a function of one map result: the entries of a
            // changed document are re-reduced with the others of their key only.
            string text = reduce.Trim().TrimEnd(';').TrimEnd();
            texts.Add(text);
            texts.Add(text);
            var parsed = Parse(maps.Count, text, maps.Count);
            bodies.Add(parsed);
            (keyVariable, var keyBody) = GroupKey(parsed) ?? throw Error(maps.Count, text, 0,
                "a reduce groups its results: from r in results group r by r.Key into g select new { ... } or results.GroupBy(r => r.Key).Select(g => new { ... })", maps.Count);
            bodies.Add(keyBody);
        }

        CSharpCompilation compilation;
        SyntaxTree tree;
        for (int pass = 0; ; pass++)
        {
            (tree, compilation) = Build(collections, bodies, maps.Count, keyVariable, sourceTrees, extra);
            var model = compilation.GetSemanticModel(tree);
            var placed = MapBodies(tree);
            bool changed = false;
            for (int m = 0; m < bodies.Count; m++)
            {
                var rewritten = Rewrite(placed[m], model);
                if (rewritten != null)
                {
                    bodies[m] = rewritten;
                    changed = true;
                }
            }
            if (!changed || pass >= 12)
                break;
        }
        var finalModel = compilation.GetSemanticModel(tree);
        var finalBodies = MapBodies(tree);
        var error = compilation.GetDiagnostics().FirstOrDefault(d => d.Severity == DiagnosticSeverity.Error);
        if (error != null && error.Location.SourceTree != tree)
        {
            var at = error.Location.GetLineSpan().StartLinePosition;
            throw new IndexCompilationException($"Additional source, line {at.Line + 1}, column {at.Character + 1}: {error.GetMessage(System.Globalization.CultureInfo.InvariantCulture)}", "AdditionalSources", error.Location.SourceTree?.ToString() ?? "");
        }
        foreach (var sourceTree in sourceTrees)
        {
            var model = compilation.GetSemanticModel(sourceTree);
            Sandbox.Check(sourceTree.GetRoot(), model, compilation.Assembly, extra: extra.Select(r => compilation.GetAssemblyOrModuleSymbol(r)).OfType<IAssemblySymbol>().ToHashSet<IAssemblySymbol>(SymbolEqualityComparer.Default), error: (node, message) =>
            {
                var at = node.GetLocation().GetLineSpan().StartLinePosition;
                return new IndexCompilationException($"Additional source, line {at.Line + 1}, column {at.Character + 1}: {message}", "AdditionalSources", sourceTree.ToString());
            });
        }
        if (error != null)
        {
            var (map, offset) = Locate(finalBodies, tree, error.Location.SourceSpan);
            throw Error(map, texts[map], offset, error.GetMessage(System.Globalization.CultureInfo.InvariantCulture), maps.Count);
        }
        var added = extra.Select(r => compilation.GetAssemblyOrModuleSymbol(r)).OfType<IAssemblySymbol>().ToHashSet<IAssemblySymbol>(SymbolEqualityComparer.Default);
        for (int m = 0; m < finalBodies.Count; m++)
            Sandbox.Check(finalBodies[m], finalModel, compilation.Assembly, (node, message) => Error(m, texts[m], OriginalOffset(node), message, maps.Count), added);

        var fields = new List<IReadOnlyList<string>>();
        for (int m = 0; m < Math.Min(finalBodies.Count, maps.Count + 1); m++)
        {
            var type = finalModel.GetTypeInfo(finalBodies[m]).Type;
            var element = type?.AllInterfaces.Append(type as INamedTypeSymbol).OfType<INamedTypeSymbol>()
                .FirstOrDefault(i => i.OriginalDefinition.SpecialType == SpecialType.System_Collections_Generic_IEnumerable_T)?.TypeArguments[0];
            if (element is INamedTypeSymbol { Name: "BoostedEntry", TypeArguments: [var boosted] })
                element = boosted; // select new { ... }.Boost(n): the entry's fields
            if (element is not INamedTypeSymbol { IsAnonymousType: true } anonymous)
                throw Error(m, texts[m], 0, $"{(m < maps.Count ? "a map's entries" : "a reduce's results")} must be anonymous objects (select new {{ Name = ... }}), not {element?.ToDisplayString() ?? type?.ToDisplayString() ?? "unknown"}", maps.Count);
            fields.Add(anonymous.GetMembers().OfType<IPropertySymbol>().Select(p => p.Name).ToList());
        }

        using var ms = new MemoryStream();
        var emitted = compilation.Emit(ms);
        if (!emitted.Success)
            throw Error(0, texts[0], 0, string.Join("; ", emitted.Diagnostics.Where(d => d.Severity == DiagnosticSeverity.Error).Select(d => d.GetMessage(System.Globalization.CultureInfo.InvariantCulture))), maps.Count);
        StoreCached(diskCache, key, ms.ToArray(), fields, spatial, reads);
        ms.Position = 0;
        return Load(ms, fields, spatial, reads, maps.Count, reduce != null);
    }

    /// <summary>Parses one map or reduce; every node remembers where it was, so errors in rewritten code point at the text the user wrote.</summary>
    private static ExpressionSyntax Parse(int index, string text, int mapCount)
    {
        var parsed = SyntaxFactory.ParseExpression(text);
        var syntaxError = parsed.GetDiagnostics().FirstOrDefault(d => d.Severity == DiagnosticSeverity.Error);
        if (syntaxError != null)
            throw Error(index, text, syntaxError.Location.SourceSpan.Start, syntaxError.GetMessage(), mapCount);
        if (parsed.Span.End < text.Length)
            throw Error(index, text, parsed.Span.End, "unexpected text after the expression", mapCount);
        return parsed.ReplaceNodes(parsed.DescendantNodesAndSelf(), (o, r) => r.WithAdditionalAnnotations(new SyntaxAnnotation(PositionAnnotation, o.SpanStart.ToString(System.Globalization.CultureInfo.InvariantCulture))));
    }

    /// <summary>
    /// RavenDB's <c>x.Boost(n)</c> as calls C# can bind on dynamic values: <c>Boost(x, n)</c> for a value,
    /// <c>BoostEntry(new { ... }, n)</c> for a whole entry (its anonymous type kept, so its fields are still known).
    /// </summary>
    private static ExpressionSyntax RewriteBoosts(ExpressionSyntax map)
    {
        var boosts = map.DescendantNodesAndSelf().OfType<InvocationExpressionSyntax>()
            .Where(i => i.Expression is MemberAccessExpressionSyntax { Name.Identifier.Text: "Boost" } && i.ArgumentList.Arguments.Count == 1).ToList();
        if (boosts.Count == 0)
            return map;
        return map.ReplaceNodes(boosts, (original, rewritten) =>
        {
            var receiver = ((MemberAccessExpressionSyntax)rewritten.Expression).Expression;
            string function = receiver is AnonymousObjectCreationExpressionSyntax ? "BoostEntry" : "Boost";
            var args = SyntaxFactory.SeparatedList([SyntaxFactory.Argument(receiver.WithoutTrivia()), rewritten.ArgumentList.Arguments[0]]);
            return SyntaxFactory.InvocationExpression(SyntaxFactory.IdentifierName(function), SyntaxFactory.ArgumentList(args))
                .WithTriviaFrom(rewritten).WithAdditionalAnnotations(original.GetAnnotations(PositionAnnotation));
        });
    }

    /// <summary>The reduce's group-by key: its variable and expression (<c>group r by KEY</c> or <c>GroupBy(r =&gt; KEY)</c>).</summary>
    private static (string Variable, ExpressionSyntax Key)? GroupKey(ExpressionSyntax reduce)
    {
        foreach (var node in reduce.DescendantNodesAndSelf())
        {
            if (node is GroupClauseSyntax group && group.Ancestors().OfType<QueryExpressionSyntax>().FirstOrDefault() is { } query)
                return (query.FromClause.Identifier.Text, group.ByExpression);
            if (node is InvocationExpressionSyntax { Expression: MemberAccessExpressionSyntax { Name.Identifier.Text: "GroupBy" } } call
                && call.ArgumentList.Arguments.FirstOrDefault()?.Expression is SimpleLambdaExpressionSyntax { ExpressionBody: { } body } lambda)
                return (lambda.Parameter.Identifier.Text, body);
        }
        return null;
    }

    private static (SyntaxTree, CSharpCompilation) Build(List<string> collections, List<ExpressionSyntax> bodies, int mapCount, string? keyVariable, List<SyntaxTree> sources, MetadataReference[] extra)
    {
        var sb = new StringBuilder();
        sb.AppendLine("using System; using System.Linq; using System.Collections.Generic; using System.Globalization; using System.Text.RegularExpressions;");
        sb.AppendLine($"using FieldIndexing = global::RavenLite.Server.Indexing.FieldIndexing; using CreateFieldOptions = {Scripting}.CreateFieldOptions; using FieldStorage = {Scripting}.FieldStorage; using FieldTermVector = {Scripting}.FieldTermVector;");
        sb.AppendLine($"public sealed class GeneratedIndex : {Scripting}.CSharpIndexScript {{ public GeneratedIndex() {{");
        for (int i = 0; i < collections.Count; i++)
            sb.AppendLine($"AddMap({SymbolDisplay.FormatLiteral(collections[i], true)}, (IEnumerable<dynamic> docs) => __map{i});");
        if (keyVariable != null)
        {
            sb.AppendLine($"SetReduce((IEnumerable<dynamic> results) => __map{mapCount});");
            sb.AppendLine($"SetReduceKey((dynamic {keyVariable}) => (object)__map{mapCount + 1});");
        }
        sb.AppendLine("} }");
        var root = CSharpSyntaxTree.ParseText(sb.ToString()).GetRoot();
        var placeholders = root.DescendantNodes().OfType<IdentifierNameSyntax>().Where(n => n.Identifier.Text.StartsWith("__map", StringComparison.Ordinal)).ToList();
        root = root.ReplaceNodes(placeholders, (o, _) => SyntaxFactory.ParenthesizedExpression(bodies[int.Parse(o.Identifier.Text[5..], System.Globalization.CultureInfo.InvariantCulture)]).WithAdditionalAnnotations(new SyntaxAnnotation("map", o.Identifier.Text[5..])));
        var tree = CSharpSyntaxTree.Create((CSharpSyntaxNode)root);
        var compilation = CSharpCompilation.Create("index-" + Guid.NewGuid().ToString("N"), [tree, .. sources], [.. References.Value, .. extra],
            new CSharpCompilationOptions(OutputKind.DynamicallyLinkedLibrary, optimizationLevel: OptimizationLevel.Release, allowUnsafe: false, nullableContextOptions: NullableContextOptions.Disable));
        return (tree, compilation);
    }

    /// <summary>Each map's expression inside the generated tree (inside the parentheses added around it).</summary>
    private static List<ExpressionSyntax> MapBodies(SyntaxTree tree) =>
        tree.GetRoot().GetAnnotatedNodes("map").OfType<ParenthesizedExpressionSyntax>()
            .OrderBy(n => int.Parse(n.GetAnnotations("map").First().Data!, System.Globalization.CultureInfo.InvariantCulture)).Select(n => n.Expression).ToList();

    /// <summary>
    /// One round of rewrites of <paramref name="body"/> where C# cannot bind dynamic code: a query over a dynamic
    /// source, a LINQ method called on a dynamic value (or Sum/Average/Min/Max/SelectMany over dynamic items, which
    /// C# cannot choose an overload for), and index functions given dynamic arguments. Null when nothing changes.
    /// </summary>
    private static ExpressionSyntax? Rewrite(ExpressionSyntax body, SemanticModel model)
    {
        var plan = new Dictionary<SyntaxNode, Func<SyntaxNode, SyntaxNode>>();
        foreach (var node in body.DescendantNodesAndSelf())
        {
            switch (node)
            {
                case FromClauseSyntax from when IsDynamic(model, from.Expression):
                    plan[from.Expression] = n => Enumerate((ExpressionSyntax)n);
                    break;
                case JoinClauseSyntax join when IsDynamic(model, join.InExpression):
                    plan[join.InExpression] = n => Enumerate((ExpressionSyntax)n);
                    break;
                case InvocationExpressionSyntax { Expression: MemberAccessExpressionSyntax ma } inv
                    when DynamicLinq.Names.Contains(ma.Name.Identifier.Text)
                         && (IsDynamic(model, ma.Expression) || (ma.Name.Identifier.Text is "Sum" or "Average" or "Min" or "Max" or "SelectMany" && HasDynamicItems(model, ma.Expression))):
                    plan[inv] = n =>
                    {
                        var i = (InvocationExpressionSyntax)n;
                        var receiver = ((MemberAccessExpressionSyntax)i.Expression).Expression;
                        var name = ((MemberAccessExpressionSyntax)i.Expression).Name.Identifier.Text;
                        var args = new List<ArgumentSyntax> { SyntaxFactory.Argument(AsObject(receiver)) };
                        args.AddRange(i.ArgumentList.Arguments);
                        return SyntaxFactory.InvocationExpression(SyntaxFactory.ParseExpression($"{Scripting}.DynamicLinq.{name}"), SyntaxFactory.ArgumentList(SyntaxFactory.SeparatedList(args)))
                            .WithAdditionalAnnotations(i.GetAnnotations(PositionAnnotation));
                    };
                    break;
                case InvocationExpressionSyntax { Expression: IdentifierNameSyntax { Identifier.Text: "Id" or "MetadataFor" or "AsJson" or "LoadDocument" or "Recurse" or "CreateSpatialField" } } call
                    when call.ArgumentList.Arguments.Any(a => a.Expression is not LambdaExpressionSyntax && IsDynamic(model, a.Expression)):
                    var dynamicArgs = call.ArgumentList.Arguments.Select(a => a.Expression is not LambdaExpressionSyntax && IsDynamic(model, a.Expression)).ToArray();
                    plan[call] = n =>
                    {
                        var i = (InvocationExpressionSyntax)n;
                        return i.WithArgumentList(SyntaxFactory.ArgumentList(SyntaxFactory.SeparatedList(i.ArgumentList.Arguments.Select((a, k) =>
                            dynamicArgs[k] ? a.WithExpression(AsObject(a.Expression)) : a))));
                    };
                    break;
            }
        }
        if (plan.Count == 0)
            return null;
        return body.ReplaceNodes(plan.Keys, (original, rewritten) => plan[original](rewritten));
    }

    private static bool IsDynamic(SemanticModel model, ExpressionSyntax e) => model.GetTypeInfo(e).Type?.TypeKind == TypeKind.Dynamic;

    private static bool HasDynamicItems(SemanticModel model, ExpressionSyntax e)
    {
        var type = model.GetTypeInfo(e).Type;
        if (type == null)
            return false;
        var enumerable = type.AllInterfaces.Append(type as INamedTypeSymbol).OfType<INamedTypeSymbol>()
            .FirstOrDefault(i => i.OriginalDefinition.SpecialType == SpecialType.System_Collections_Generic_IEnumerable_T);
        return enumerable?.TypeArguments[0] is { } item && (item.TypeKind == TypeKind.Dynamic || item.SpecialType == SpecialType.System_Object);
    }

    private static CastExpressionSyntax AsObject(ExpressionSyntax e) =>
        SyntaxFactory.CastExpression(SyntaxFactory.PredefinedType(SyntaxFactory.Token(SyntaxKind.ObjectKeyword)), SyntaxFactory.ParenthesizedExpression(e.WithoutTrivia()))
            .WithAdditionalAnnotations(e.GetAnnotations(PositionAnnotation));

    private static InvocationExpressionSyntax Enumerate(ExpressionSyntax e) =>
        SyntaxFactory.InvocationExpression(SyntaxFactory.ParseExpression($"{Scripting}.DynamicLinq.Enumerate"),
            SyntaxFactory.ArgumentList(SyntaxFactory.SingletonSeparatedList(SyntaxFactory.Argument(AsObject(e))))).WithTriviaFrom(e)
            .WithAdditionalAnnotations(e.GetAnnotations(PositionAnnotation));

    /// <summary><c>docs.Orders</c> or <c>docs["Orders"]</c>.</summary>
    /// <summary>
    /// The top-level properties of a document that a map (its collection already replaced by <c>docs</c>) reads, or
    /// null when it may use a document whole. A document reaches map code only through a variable: the range variable
    /// of a query over <c>docs</c> (or over calls on it), or a parameter of a lambda given to a call on <c>docs</c>. When
    /// every use of such a variable is <c>o.Name</c> or <c>o?.Name</c> (not a method call), <c>Id(o)</c> or
    /// <c>MetadataFor(o)</c>, the map reads those names (and <c>@metadata</c>) and nothing else of the document; any
    /// other use (<c>select o</c>, <c>group o by</c>, <c>AsJson(o)</c>, <c>o["Name"]</c>, <c>o.ToString()</c>, a method
    /// given <c>o</c>), or <c>docs</c> anywhere else, means null. A name another variable shares only makes the
    /// answer more cautious (more names, or null), never smaller than what is read.
    /// </summary>
    internal static HashSet<string>? DocumentReads(ExpressionSyntax map)
    {
        var variables = new HashSet<string>(StringComparer.Ordinal);
        foreach (var docs in map.DescendantNodesAndSelf().OfType<IdentifierNameSyntax>().Where(n => n.Identifier.Text == "docs"))
        {
            if (docs.Parent is MemberAccessExpressionSyntax { Name: var member } && member == docs)
                continue; // x.docs: a member name
            ExpressionSyntax top = docs;
            // docs.Where(o => ...).Select(o => ...): every lambda parameter along the chain may be a document.
            while (top.Parent is MemberAccessExpressionSyntax access && access.Expression == top && access.Parent is InvocationExpressionSyntax call && call.Expression == access)
            {
                if (access.Name.Identifier.Text is not ("Select" or "Where" or "SelectMany" or "OrderBy" or "OrderByDescending" or "ThenBy" or "ThenByDescending"))
                    return null;
                foreach (var argument in call.ArgumentList.Arguments)
                {
                    switch (argument.Expression)
                    {
                        case SimpleLambdaExpressionSyntax lambda:
                            variables.Add(lambda.Parameter.Identifier.Text);
                            break;
                        case ParenthesizedLambdaExpressionSyntax lambda:
                            foreach (var parameter in lambda.ParameterList.Parameters)
                                variables.Add(parameter.Identifier.Text);
                            break;
                        default:
                            return null;
                    }
                }
                top = call;
            }
            while (top.Parent is ParenthesizedExpressionSyntax parenthesized)
                top = parenthesized;
            if (top.Parent is FromClauseSyntax from && from.Expression == top)
                variables.Add(from.Identifier.Text);
            else if (top != map)
                return null;
        }
        var reads = new HashSet<string>(StringComparer.Ordinal);
        foreach (var use in map.DescendantNodesAndSelf().OfType<IdentifierNameSyntax>())
        {
            if (!variables.Contains(use.Identifier.Text))
                continue;
            switch (use.Parent)
            {
                case MemberAccessExpressionSyntax access when access.Name == use:
                case NameEqualsSyntax:
                case NameColonSyntax:
                    continue; // a member or a declared name, not the variable
                case MemberAccessExpressionSyntax access when access.Expression == use:
                    if (access.Parent is InvocationExpressionSyntax call && call.Expression == access || access.Name is not IdentifierNameSyntax)
                        return null;
                    reads.Add(access.Name.Identifier.ValueText); // ValueText: o.@group reads "group"
                    continue;
                case ConditionalAccessExpressionSyntax conditional when conditional.Expression == use:
                    if (FirstBinding(conditional.WhenNotNull) is not { Name: IdentifierNameSyntax name } binding
                        || binding.Parent is InvocationExpressionSyntax invoked && invoked.Expression == binding)
                        return null;
                    reads.Add(name.Identifier.ValueText);
                    continue;
                case ArgumentSyntax { Parent: ArgumentListSyntax { Arguments.Count: 1, Parent: InvocationExpressionSyntax { Expression: IdentifierNameSyntax function } } }
                    when function.Identifier.Text is "Id" or "MetadataFor":
                    if (function.Identifier.Text == "MetadataFor")
                        reads.Add("@metadata");
                    continue;
                default:
                    return null;
            }
        }
        return reads;
    }

    /// <summary>The member binding a conditional access starts with (<c>.Name</c> of <c>o?.Name.More</c>), or null.</summary>
    private static MemberBindingExpressionSyntax? FirstBinding(ExpressionSyntax whenNotNull)
    {
        for (ExpressionSyntax? e = whenNotNull; e != null;)
        {
            if (e is MemberBindingExpressionSyntax binding)
                return binding;
            e = e switch
            {
                MemberAccessExpressionSyntax access => access.Expression,
                InvocationExpressionSyntax call => call.Expression,
                ElementAccessExpressionSyntax element => element.Expression,
                ConditionalAccessExpressionSyntax conditional => conditional.Expression,
                _ => null,
            };
        }
        return null;
    }

    private static bool IsDocsCollection(SyntaxNode n) => n switch
    {
        // docs.Select(..) is LINQ over every document, not a collection named Select.
        MemberAccessExpressionSyntax { Expression: IdentifierNameSyntax { Identifier.Text: "docs" }, Name.Identifier.Text: "Select" or "Where" or "SelectMany", Parent: InvocationExpressionSyntax } => false,
        MemberAccessExpressionSyntax { Expression: IdentifierNameSyntax { Identifier.Text: "docs" } } => true,
        ElementAccessExpressionSyntax { Expression: IdentifierNameSyntax { Identifier.Text: "docs" }, ArgumentList.Arguments: [{ Expression: LiteralExpressionSyntax { RawKind: (int)SyntaxKind.StringLiteralExpression } }] } => true,
        _ => false,
    };

    /// <summary>
    /// <c>counters</c>, <c>counters.Companies</c>, <c>counters.Companies.Likes</c> (and <c>timeSeries</c>/<c>timeseries</c>,
    /// member or string-indexer forms) starting at <paramref name="n"/>: the whole expression and what it reads; else null.
    /// </summary>
    private static (SyntaxNode Top, IndexSource Source)? ItemSource(SyntaxNode n)
    {
        if (n is not IdentifierNameSyntax { Identifier.Text: "counters" or "timeSeries" or "timeseries" } root
            || root.Parent is MemberAccessExpressionSyntax { Name: var member } && member == root)
            return null;
        var kind = root.Identifier.Text == "counters" ? IndexSourceType.Counters : IndexSourceType.TimeSeries;
        SyntaxNode top = root;
        var parts = new List<string>();
        while (parts.Count < 2)
        {
            if (top.Parent is MemberAccessExpressionSyntax ma && ma.Expression == top
                && !(ma.Parent is InvocationExpressionSyntax && ma.Name.Identifier.Text is "Select" or "Where" or "SelectMany" or "OrderBy" or "GroupBy" or "Take" or "Skip"))
                parts.Add(ma.Name.Identifier.Text);
            else if (top.Parent is ElementAccessExpressionSyntax { ArgumentList.Arguments: [{ Expression: LiteralExpressionSyntax { RawKind: (int)SyntaxKind.StringLiteralExpression } literal }] } ea && ea.Expression == top)
                parts.Add(literal.Token.ValueText);
            else
                break;
            top = top.Parent;
        }
        return (top, new IndexSource(kind, parts.Count > 0 ? parts[0] : CompiledIndex.AllDocuments, parts.Count > 1 ? parts[1] : null));
    }

    private static string CollectionName(SyntaxNode n) => n switch
    {
        MemberAccessExpressionSyntax ma => ma.Name.Identifier.Text,
        ElementAccessExpressionSyntax ea => ((LiteralExpressionSyntax)ea.ArgumentList.Arguments[0].Expression).Token.ValueText,
        _ => "",
    };

    /// <summary>The offset in the user's map text of the node (or its nearest ancestor from that text).</summary>
    private static int OriginalOffset(SyntaxNode node)
    {
        for (var n = node; n != null; n = n.Parent)
            if (n.GetAnnotations(PositionAnnotation).FirstOrDefault() is { Data: { } data })
                return int.Parse(data, System.Globalization.CultureInfo.InvariantCulture);
        return 0;
    }

    private static (int Map, int Offset) Locate(List<ExpressionSyntax> bodies, SyntaxTree tree, Microsoft.CodeAnalysis.Text.TextSpan span)
    {
        var node = tree.GetRoot().FindNode(span, getInnermostNodeForTie: true);
        for (int m = 0; m < bodies.Count; m++)
            if (bodies[m].Span.Contains(span.Start))
                return (m, OriginalOffset(node));
        return (0, 0);
    }

    private static IndexCompilationException Error(int map, string text, int offset, string message, int mapCount)
    {
        int line = 1, column = 1;
        for (int i = 0; i < Math.Min(offset, text.Length); i++)
        {
            if (text[i] == '\n')
            {
                line++;
                column = 1;
            }
            else
            {
                column++;
            }
        }
        string near = text.Substring(Math.Min(offset, text.Length), Math.Min(40, Math.Max(0, text.Length - offset)));
        string where = map < mapCount ? $"Map {map + 1}" : "Reduce";
        return new IndexCompilationException($"{where}, line {line}, column {column}: {message} (at '{near}')", map < mapCount ? "Maps" : "Reduce", text);
    }

    /// <summary>What index code may name (see the class summary).</summary>
    private static class Sandbox
    {
        private static readonly HashSet<string> AllowedTypes =
        [
            "System.Object", "System.String", "System.Char", "System.Boolean", "System.Byte", "System.SByte", "System.Int16", "System.UInt16",
            "System.Int32", "System.UInt32", "System.Int64", "System.UInt64", "System.Single", "System.Double", "System.Decimal", "System.Math",
            "System.MathF", "System.DateTime", "System.DateTimeOffset", "System.DateOnly", "System.TimeOnly", "System.TimeSpan", "System.DayOfWeek",
            "System.DateTimeKind", "System.Guid", "System.Convert", "System.Nullable", "System.Nullable`1", "System.StringComparison",
            "System.StringComparer", "System.StringSplitOptions", "System.MidpointRounding", "System.Func`1", "System.Func`2", "System.Func`3",
            "System.Func`4", "System.Func`5", "System.Tuple", "System.Tuple`1", "System.Tuple`2", "System.Tuple`3", "System.Tuple`4",
            "System.ValueTuple`2", "System.ValueTuple`3", "System.ValueTuple`4", "System.Array", "System.IComparable", "System.IComparable`1",
            "System.IEquatable`1", "System.Void", "System.Linq.Enumerable", "System.Linq.IGrouping`2", "System.Linq.ILookup`2",
            "System.Linq.IOrderedEnumerable`1", "System.Collections.IEnumerable", "System.Globalization.CultureInfo",
            "System.Globalization.NumberStyles", "System.Globalization.DateTimeStyles", "System.Globalization.CompareOptions",
            "System.Text.StringBuilder", "System.Text.RegularExpressions.Regex", "System.Text.RegularExpressions.RegexOptions",
            "System.Text.RegularExpressions.Match", "System.Text.RegularExpressions.MatchCollection", "System.Text.RegularExpressions.Group",
            "System.Text.RegularExpressions.GroupCollection", "System.Text.RegularExpressions.Capture", "RavenLite.Server.Indexing.FieldIndexing",
        ];

        private static readonly HashSet<string> AllowedNamespaces = ["System.Collections.Generic", "RavenLite.Server.Indexing.Scripting"];

        /// <summary>Members refused on any value, also when bound at run time (dynamic): the ways into reflection.</summary>
        private static readonly HashSet<string> DeniedNames =
        [
            "GetType", "MemberwiseClone", "Assembly", "Module", "Method", "Target", "DynamicInvoke", "InvokeMember", "GetMethod", "GetMethods",
            "GetProperty", "GetProperties", "GetField", "GetFields", "GetMember", "GetMembers", "GetConstructor", "GetConstructors",
            "CreateInstance", "TypeHandle", "MethodHandle", "DeclaringType", "ReflectedType", "GetTypeInfo", "GetMetaObject", "Compile",
            "UnderlyingSystemType", "BaseType", "MakeGenericType", "MakeGenericMethod", "GetInterfaces", "TargetSite",
        ];

        /// <summary>
        /// Namespaces refused even in an assembly the index adds (AdditionalAssemblies): what reaches files, the network,
        /// processes, reflection, threads, native code or the process's security.
        /// </summary>
        private static readonly string[] DeniedNamespaces =
        [
            "System.IO", "System.Net", "System.Reflection", "System.Diagnostics", "System.Threading", "System.Runtime", "System.Security",
            "Microsoft.Win32", "System.Resources", "System.Configuration",
        ];

        public static void Check(SyntaxNode body, SemanticModel model, IAssemblySymbol own, Func<SyntaxNode, string, Exception> error, IReadOnlySet<IAssemblySymbol>? extra = null)
        {
            foreach (var node in body.DescendantNodesAndSelf())
            {
                // typeof(T).Name / FullName / Namespace: the name of a type, as RavenDB's samples use it; no Type value escapes.
                if (IsTypeName(node))
                    continue;
                switch (node)
                {
                    case TypeOfExpressionSyntax or PointerTypeSyntax or FunctionPointerTypeSyntax or StackAllocArrayCreationExpressionSyntax
                        or MakeRefExpressionSyntax or RefTypeExpressionSyntax or RefValueExpressionSyntax or UnsafeStatementSyntax or FixedStatementSyntax
                        or LockStatementSyntax or AwaitExpressionSyntax or AttributeSyntax:
                        throw error(node, $"'{node.ToString().Split('(')[0]}' is not allowed in index code");
                    case WhileStatementSyntax or DoStatementSyntax or ForStatementSyntax or GotoStatementSyntax or LocalFunctionStatementSyntax:
                        throw error(node, "loops, goto and local functions are not allowed in index code (use LINQ)");
                    case SimpleNameSyntax name when DeniedNames.Contains(name.Identifier.Text):
                        throw error(node, $"'{name.Identifier.Text}' is not allowed in index code (no reflection)");
                }
                if (node is not (ExpressionSyntax or TypeSyntax))
                    continue;
                var info = model.GetSymbolInfo(node);
                var symbol = info.Symbol ?? info.CandidateSymbols.FirstOrDefault();
                if (symbol != null && SymbolEqualityComparer.Default.Equals(symbol.ContainingAssembly, own) && symbol is not IMethodSymbol { MethodKind: MethodKind.DelegateInvoke })
                    continue; // the index's own code (additional sources, checked themselves)
                if (symbol != null && !Allowed(symbol) && !FromAdded(symbol, extra))
                    throw error(node, $"'{symbol.ToDisplayString()}' is not allowed in index code");
                if (symbol is IMethodSymbol { MethodKind: MethodKind.DelegateInvoke })
                    throw error(node, "calling a delegate is not allowed in index code (no recursion)");
                if (node is ExpressionSyntax && model.GetTypeInfo(node).Type is { } type && !SymbolEqualityComparer.Default.Equals(type.ContainingAssembly, own) && !AllowedType(type)
                    && !FromAdded(type, extra))
                    throw error(node, $"a value of type '{type.ToDisplayString()}' is not allowed in index code");
            }
        }

        /// <summary><c>typeof(T).Name</c> (or FullName, Namespace), or the <c>typeof(T)</c> or type inside it.</summary>
        private static bool IsTypeName(SyntaxNode node) => node switch
        {
            MemberAccessExpressionSyntax { Expression: TypeOfExpressionSyntax, Name.Identifier.Text: "Name" or "FullName" or "Namespace" } => true,
            TypeOfExpressionSyntax t => t.Parent != null && IsTypeName(t.Parent),
            IdentifierNameSyntax { Parent: MemberAccessExpressionSyntax { Expression: TypeOfExpressionSyntax } access } name when access.Name == name => IsTypeName(access),
            TypeSyntax ts when ts.Ancestors().OfType<TypeOfExpressionSyntax>().FirstOrDefault() is { } t => t.Parent != null && IsTypeName(t.Parent),
            _ => false,
        };

        /// <summary>A symbol of an assembly the index added, outside <see cref="DeniedNamespaces"/>, not a way into reflection.</summary>
        private static bool FromAdded(ISymbol symbol, IReadOnlySet<IAssemblySymbol>? extra)
        {
            if (extra == null || extra.Count == 0 || DeniedNames.Contains(symbol.Name))
                return false;
            var type = symbol as ITypeSymbol ?? symbol.ContainingType;
            if (type == null || !extra.Contains(type.ContainingAssembly))
                return false;
            string ns = type.ContainingNamespace?.ToDisplayString() ?? "";
            return !DeniedNamespaces.Any(d => ns == d || ns.StartsWith(d + ".", StringComparison.Ordinal));
        }

        private static bool Allowed(ISymbol symbol) => symbol switch
        {
            ILocalSymbol or IParameterSymbol or IRangeVariableSymbol or IDiscardSymbol or ILabelSymbol or INamespaceSymbol => true,
            ITypeSymbol t => AllowedType(t),
            IMethodSymbol { MethodKind: MethodKind.AnonymousFunction or MethodKind.BuiltinOperator } => true,
            IMethodSymbol m => !DeniedNames.Contains(m.Name) && AllowedType(m.ContainingType) && m.TypeArguments.All(AllowedType),
            IPropertySymbol or IFieldSymbol or IEventSymbol => !DeniedNames.Contains(symbol.Name) && AllowedType(symbol.ContainingType),
            _ => false,
        };

        private static bool AllowedType(ITypeSymbol type) => type switch
        {
            { TypeKind: TypeKind.Dynamic or TypeKind.TypeParameter or TypeKind.Error } => true,
            IArrayTypeSymbol a => AllowedType(a.ElementType),
            INamedTypeSymbol { IsAnonymousType: true } => true,
            INamedTypeSymbol { IsTupleType: true } n => n.TupleElements.All(e => AllowedType(e.Type)),
            INamedTypeSymbol n => AllowedName(n) && n.TypeArguments.All(AllowedType),
            _ => false,
        };

        private static bool AllowedName(INamedTypeSymbol n)
        {
            string ns = n.ContainingNamespace?.ToDisplayString() ?? "";
            return AllowedTypes.Contains(ns + "." + n.OriginalDefinition.MetadataName) || AllowedNamespaces.Contains(ns)
                   || (n.ContainingType != null && AllowedName(n.ContainingType));
        }
    }
}
