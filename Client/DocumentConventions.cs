using System.Reflection;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace RavenLite.Client;

/// <summary>
/// How entities map to documents: JSON serialization, collection names, the identity property and
/// id prefixes, optimistic concurrency and the per-session request guard. Set before
/// <see cref="DocumentStore.Initialize"/>; frozen afterwards (a store shares one instance across threads).
/// </summary>
public sealed class DocumentConventions
{
    private JsonSerializerOptions _json = new(JsonSerializerDefaults.General)
    {
        DefaultIgnoreCondition = JsonIgnoreCondition.Never,
        NumberHandling = JsonNumberHandling.Strict,
    };
    private bool _frozen;

    /// <summary>
    /// Serializer options for entities and projections (System.Text.Json). Default: property names
    /// as declared (PascalCase, like RavenDB's C# client). Set a naming policy here to store camelCase.
    /// </summary>
    public JsonSerializerOptions JsonSerializerOptions
    {
        get => _json;
        set
        {
            ThrowIfFrozen();
            _json = value ?? throw new ArgumentNullException(nameof(value));
        }
    }

    /// <summary>Collection of an entity type. Default: the type name pluralized (<c>User</c> → <c>Users</c>, <c>Company</c> → <c>Companies</c>).</summary>
    public Func<Type, string> FindCollectionName { get; set; } = DefaultCollectionName;

    /// <summary>Document id prefix of a collection. Default: lower-cased (<c>Users</c> → <c>users</c>, so ids look like <c>users/1-A</c>).</summary>
    public Func<string, string> TransformCollectionNameToDocumentIdPrefix { get; set; } = static c => c.ToLowerInvariant();

    /// <summary>Name of the string property holding an entity's id. Default <c>Id</c>. It is not stored inside the document body.</summary>
    public string IdentityPropertyName { get; set; } = "Id";

    /// <summary>
    /// Custom id generation: given the database and the entity, returns its new id. Null (default):
    /// HiLo ranges from the server, ids like <c>users/1-A</c>.
    /// </summary>
    public Func<string, object, CancellationToken, Task<string>>? DocumentIdGenerator { get; set; }

    /// <summary>Separator between prefix and number in generated ids. Default <c>'/'</c>.</summary>
    public char IdentityPartsSeparator { get; set; } = '/';

    /// <summary>When true, every session sends change vectors so a concurrent change fails with <see cref="Exceptions.ConcurrencyException"/>. Default false; a session can override it.</summary>
    public bool UseOptimisticConcurrency { get; set; }

    /// <summary>Requests one session may make before it throws (a guard against N+1 loops). Default 30.</summary>
    public int MaxNumberOfRequestsPerSession { get; set; } = 30;

    /// <summary>
    /// Which node of a database's group a read goes to (writes go to the preferred node): <c>None</c> (default),
    /// <c>RoundRobin</c> or <c>FastestNode</c>. A client configuration set on the server overrides it.
    /// </summary>
    public Http.ReadBalanceBehavior ReadBalanceBehavior { get; set; }

    /// <summary>Timeout of each HTTP request. Default 60 seconds.</summary>
    public TimeSpan RequestTimeout { get; set; } = TimeSpan.FromSeconds(60);

    internal void Freeze()
    {
        _frozen = true;
        _json.MakeReadOnly(populateMissingResolver: true);
    }

    private void ThrowIfFrozen()
    {
        if (_frozen)
            throw new InvalidOperationException("Conventions cannot change after DocumentStore.Initialize().");
    }

    private static readonly (string Singular, string Plural)[] Irregular =
        [("Person", "People"), ("Child", "Children"), ("Woman", "Women"), ("Man", "Men"), ("Mouse", "Mice")];

    /// <summary>The default collection naming: English plurals of the type name (<c>Person</c> → <c>People</c>).</summary>
    public static string DefaultCollectionName(Type type)
    {
        ArgumentNullException.ThrowIfNull(type);
        string name = type.Name;
        int tick = name.IndexOf('`', StringComparison.Ordinal);
        if (tick > 0)
            name = name[..tick];
        foreach (var (singular, plural) in Irregular)
            if (name.EndsWith(singular, StringComparison.Ordinal))
                return name[..^singular.Length] + plural;
        if (name.Length > 1 && name.EndsWith('y') && !"aeiou".Contains(char.ToLowerInvariant(name[^2]), StringComparison.Ordinal))
            return name[..^1] + "ies";
        if (name.EndsWith('s') || name.EndsWith('x') || name.EndsWith('z') || name.EndsWith("ch", StringComparison.Ordinal) || name.EndsWith("sh", StringComparison.Ordinal))
            return name + "es";
        return name + "s";
    }

    /// <summary>The JSON name of the identity property under the naming policy.</summary>
    internal string IdentityJsonName => _json.PropertyNamingPolicy?.ConvertName(IdentityPropertyName) ?? IdentityPropertyName;

    /// <summary>The identity property of <paramref name="type"/>, or null when it has none (string, readable and writable).</summary>
    internal PropertyInfo? IdentityProperty(Type type)
    {
        var p = type.GetProperty(IdentityPropertyName, BindingFlags.Public | BindingFlags.Instance);
        return p is { CanRead: true, CanWrite: true } && p.PropertyType == typeof(string) ? p : null;
    }

    /// <summary>The JSON name of a CLR member under the naming policy (honours [JsonPropertyName]).</summary>
    internal string JsonName(MemberInfo member)
    {
        if (member.GetCustomAttribute<JsonPropertyNameAttribute>() is { } attr)
            return attr.Name;
        return _json.PropertyNamingPolicy?.ConvertName(member.Name) ?? member.Name;
    }
}
