namespace RavenLite.Server.Indexing;

/// <summary>The JSON shape of an <see cref="IndexDefinition"/> as the clients send and read it.</summary>
public static class IndexDefinitionJson
{
    public static IndexDefinition Read(JsonElement e)
    {
        if (e.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("Each index definition must be an object.");
        string? name = e.TryGetProperty("Name", out var n) && n.ValueKind == JsonValueKind.String ? n.GetString() : null;
        IndexStore.ValidateName(name);
        if (!e.TryGetProperty("Maps", out var maps) || maps.ValueKind != JsonValueKind.Array || maps.EnumerateArray().Any(m => m.ValueKind != JsonValueKind.String))
            throw new IndexCompilationException($"Index '{name}' needs 'Maps': an array of map strings.", "Maps", "");
        string type = e.TryGetProperty("Type", out var t) && t.ValueKind == JsonValueKind.String ? t.GetString()!
            : e.TryGetProperty("IndexType", out var it) && it.ValueKind == JsonValueKind.String ? it.GetString()! : "Map";
        var definition = new IndexDefinition
        {
            Name = name!,
            Maps = maps.EnumerateArray().Select(m => m.GetString()!).ToList(),
        };
        if (e.TryGetProperty("Reduce", out var r) && r.ValueKind == JsonValueKind.String && !string.IsNullOrWhiteSpace(r.GetString()))
            definition.Reduce = r.GetString();
        if (e.TryGetProperty("OutputReduceToCollection", out var output) && output.ValueKind == JsonValueKind.String && !string.IsNullOrWhiteSpace(output.GetString()))
            definition.OutputReduceToCollection = output.GetString();
        if (e.TryGetProperty("PatternForOutputReduceToCollectionReferences", out var pattern) && pattern.ValueKind == JsonValueKind.String && !string.IsNullOrWhiteSpace(pattern.GetString()))
            definition.PatternForOutputReduceToCollectionReferences = pattern.GetString();
        if (e.TryGetProperty("PatternReferencesCollectionName", out var references) && references.ValueKind == JsonValueKind.String && !string.IsNullOrWhiteSpace(references.GetString()))
            definition.PatternReferencesCollectionName = references.GetString();
        if (e.TryGetProperty("AdditionalSources", out var sources) && sources.ValueKind == JsonValueKind.Object)
            foreach (var source in sources.EnumerateObject())
                if (source.Value.ValueKind == JsonValueKind.String)
                    definition.AdditionalSources[source.Name] = source.Value.GetString()!;
        if (e.TryGetProperty("AdditionalAssemblies", out var assemblies) && assemblies.ValueKind == JsonValueKind.Array)
            foreach (var assembly in assemblies.EnumerateArray())
                definition.AdditionalAssemblies.Add(AdditionalAssembly(assembly));
        string reduceSuffix = definition.IsMapReduce ? "MapReduce" : "Map";
        definition.Type = type.StartsWith("JavaScript", StringComparison.Ordinal) ? "JavaScript" + reduceSuffix
            : definition.Maps.Count > 0 && type is "Map" or "MapReduce" or "None" ? IndexDefinition.DetectType(definition.Maps[0], definition.Reduce) : reduceSuffix;
        definition.SourceType = e.TryGetProperty("SourceType", out var sourceType) && sourceType.ValueKind == JsonValueKind.String && sourceType.GetString() is { } st && st != "None"
            ? Enum.TryParse<IndexSourceType>(st, ignoreCase: true, out var parsedSource) ? parsedSource
                : throw new IndexCompilationException($"Index '{name}': SourceType '{st}' is not Documents, Counters or TimeSeries.", "SourceType", st)
            : definition.Maps.Count > 0 ? IndexDefinition.DetectSourceType(definition.Maps[0]) : IndexSourceType.Documents;
        if (e.TryGetProperty("LockMode", out var lockMode) && lockMode.ValueKind == JsonValueKind.String)
            definition.LockMode = CheckLockMode(lockMode.GetString()!);
        if (e.TryGetProperty("Priority", out var priority) && priority.ValueKind == JsonValueKind.String)
            definition.Priority = CheckPriority(priority.GetString()!);
        if (e.TryGetProperty("Configuration", out var configuration) && configuration.ValueKind == JsonValueKind.Object)
            foreach (var setting in configuration.EnumerateObject())
                definition.Configuration[setting.Name] = setting.Value.ValueKind == JsonValueKind.String ? setting.Value.GetString()! : setting.Value.GetRawText();
        if (e.TryGetProperty("Fields", out var fields) && fields.ValueKind == JsonValueKind.Object)
            foreach (var f in fields.EnumerateObject())
                definition.FieldOptions[f.Name] = f.Value.Clone();
        return definition;
    }

    public static void Write(Utf8JsonWriter w, Indexing.Index i)
    {
        var d = i.Definition;
        w.WriteStartObject();
        w.WriteString("Name", d.Name);
        w.WriteString("Type", d.Type);
        w.WriteString("SourceType", d.SourceType.ToString());
        w.WriteStartArray("Maps");
        if (d.IsAuto)
            w.WriteStringValue($"from '{d.Collection}' index fields: {string.Join(", ", d.AutoFields.Select(f => f.Search ? $"search({f.Path})" : f.Path))}");
        foreach (string m in d.Maps)
            w.WriteStringValue(m);
        w.WriteEndArray();
        if (d.Reduce != null)
            w.WriteString("Reduce", d.Reduce);
        else
            w.WriteNull("Reduce");
        w.WriteStartObject("Fields");
        foreach (var f in i.Compiled.Fields.Where(f => f.Indexing != FieldIndexing.Default))
        {
            w.WriteStartObject(f.Name);
            w.WriteString("Indexing", f.Indexing.ToString());
            if (f.Analyzer != null)
                w.WriteString("Analyzer", f.Analyzer);
            w.WriteEndObject();
        }
        w.WriteEndObject();
        w.WriteStartObject("Configuration");
        foreach (var (key, value) in d.Configuration)
            w.WriteString(key, value);
        w.WriteEndObject();
        w.WriteStartArray("AdditionalAssemblies");
        foreach (string name in d.AdditionalAssemblies)
        {
            w.WriteStartObject();
            w.WriteString("AssemblyName", name);
            w.WriteNull("AssemblyPath");
            w.WriteNull("PackageName");
            w.WriteNull("PackageVersion");
            w.WriteNull("PackageSourceUrl");
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteStartObject("AdditionalSources");
        foreach (var (key, value) in d.AdditionalSources)
            w.WriteString(key, value);
        w.WriteEndObject();
        w.WriteString("OutputReduceToCollection", d.OutputReduceToCollection);
        w.WriteString("PatternForOutputReduceToCollectionReferences", d.PatternForOutputReduceToCollectionReferences);
        w.WriteString("PatternReferencesCollectionName", d.PatternReferencesCollectionName);
        w.WriteString("LockMode", i.Definition.LockMode);
        w.WriteString("Priority", i.Definition.Priority);
        w.WriteString("State", i.Definition.State);
        w.WriteEndObject();
    }

    /// <summary>
    /// One of RavenDB's AdditionalAssembly entries: a runtime assembly's name; a NuGet package or a file path is RavenDB's
    /// 400 "Cannot load ..." (index code loads no code from outside the runtime).
    /// </summary>
    private static string AdditionalAssembly(JsonElement a)
    {
        string? Text(string name) => a.ValueKind == JsonValueKind.Object && a.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String && v.GetString()!.Length > 0 ? v.GetString() : null;
        if (Text("PackageName") is { } package)
            throw new IndexCompilationException($"Cannot load NuGet package '{package}' version '{Text("PackageVersion")}' from '{Text("PackageSourceUrl") ?? "https://api.nuget.org/v3/index.json"}'. " +
                "RavenLite does not fetch NuGet packages for index code: use runtime assemblies (AdditionalAssembly.FromRuntime) or AdditionalSources.", "AdditionalAssemblies", package);
        if (Text("AssemblyPath") is { } path)
            throw new IndexCompilationException($"Cannot load assembly from path '{path}': RavenLite index code does not load assemblies from files; use runtime assemblies (AdditionalAssembly.FromRuntime) or AdditionalSources.", "AdditionalAssemblies", path);
        return Text("AssemblyName") ?? throw new IndexCompilationException("An AdditionalAssemblies entry needs AssemblyName, PackageName or AssemblyPath.", "AdditionalAssemblies", a.GetRawText());
    }

    /// <summary>A lock mode the clients may set, or a 400.</summary>
    public static string CheckLockMode(string mode) => mode is "Unlock" or "LockedIgnore" or "LockedError"
        ? mode : throw new BadRequestException($"Lock mode '{mode}' is not Unlock, LockedIgnore or LockedError.");

    /// <summary>A priority the clients may set, or a 400.</summary>
    public static string CheckPriority(string priority) => priority is "Low" or "Normal" or "High"
        ? priority : throw new BadRequestException($"Index priority '{priority}' is not Low, Normal or High.");
}
