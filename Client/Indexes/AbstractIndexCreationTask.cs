using System.Collections;
using System.Linq.Expressions;
using System.Reflection;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Indexes;

/// <summary>
/// The base of index definitions written as classes, as in RavenDB's client: the class name gives the index name
/// (<c>Orders_ByCompany</c> → <c>Orders/ByCompany</c>), <see cref="ExecuteAsync"/> puts it, and
/// <see cref="IndexCreation"/> puts every one in an assembly. The methods below stand for the
/// server's index functions inside map and reduce lambdas; they only describe the index and cannot be called.
/// </summary>
public abstract class AbstractIndexCreationTaskBase
{
    /// <summary>The index name: the class name with <c>_</c> as <c>/</c>.</summary>
    public virtual string IndexName => GetType().Name.Replace('_', '/');

    /// <summary>Per-field indexing (<c>Search</c>, <c>Exact</c>) by field name.</summary>
    protected Dictionary<string, string> IndexesStrings { get; } = [];

    /// <summary>Per-field analyzers by field name.</summary>
    protected Dictionary<string, string> AnalyzersStrings { get; } = [];

    /// <summary>Stored fields.</summary>
    protected HashSet<string> StoresStrings { get; } = [];

    /// <summary>Code the maps call (AdditionalSources), by name.</summary>
    protected Dictionary<string, string> AdditionalSources { get; } = [];

    /// <summary>Map-reduce: the collection the reduce results are also written to as documents.</summary>
    protected string? OutputReduceToCollection { get; set; }

    /// <summary>With an output collection: the id pattern of reference documents listing the outputs.</summary>
    protected string? PatternForOutputReduceToCollectionReferences { get; set; }

    /// <summary>The collection of those reference documents.</summary>
    protected string? PatternReferencesCollectionName { get; set; }

    /// <summary>The definition of this index from its maps, reduce and field options, with the options every index class has (name, sources, output collection).</summary>
    protected IndexDefinition Definition(IReadOnlyList<string> maps, string? reduce, IReadOnlyDictionary<string, IndexFieldOptions> fields, bool? javaScript = null) => new()
    {
        Name = IndexName,
        Maps = maps,
        Reduce = reduce,
        Fields = fields,
        AdditionalSources = AdditionalSources,
        OutputReduceToCollection = OutputReduceToCollection,
        PatternForOutputReduceToCollectionReferences = PatternForOutputReduceToCollectionReferences,
        PatternReferencesCollectionName = PatternReferencesCollectionName,
        JavaScript = javaScript,
    };

    /// <summary>The definition sent to the server.</summary>
    public abstract IndexDefinition CreateIndexDefinition(DocumentConventions conventions);

    /// <summary>Puts the index on the store's database (or <paramref name="database"/>).</summary>
    public async Task ExecuteAsync(IDocumentStore store, string? database = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(store);
        var maintenance = database == null ? store.Maintenance : store.Maintenance.ForDatabase(database);
        await maintenance.SendAsync(new PutIndexesOperation(CreateIndexDefinition(store.Conventions)), cancellationToken).ConfigureAwait(false);
    }

    /// <summary>The field options of the definition.</summary>
    protected IReadOnlyDictionary<string, IndexFieldOptions> FieldOptions() =>
        IndexesStrings.Keys.Concat(AnalyzersStrings.Keys).Concat(StoresStrings).Distinct(StringComparer.Ordinal).ToDictionary(
            f => f,
            f => new IndexFieldOptions { Indexing = IndexesStrings.GetValueOrDefault(f), Analyzer = AnalyzersStrings.GetValueOrDefault(f), Storage = StoresStrings.Contains(f) ? "Yes" : null },
            StringComparer.Ordinal);

    /// <summary>The server's <c>LoadDocument</c>: the document with this id (of <typeparamref name="T"/>'s collection) when the entry is made.</summary>
    protected static T LoadDocument<T>(string? id) => throw Describes();

    /// <summary>The server's <c>MetadataFor</c>: the document's <c>@metadata</c>.</summary>
    protected static IDictionary<string, object?> MetadataFor(object document) => throw Describes();

    /// <summary>The server's <c>AsJson</c>: the document as JSON.</summary>
    protected static IDictionary<string, object?> AsJson(object document) => throw Describes();

    /// <summary>The server's <c>Recurse</c>: the item and everything reached from it by <paramref name="next"/>.</summary>
    protected static IEnumerable<T> Recurse<T>(T item, Func<T, IEnumerable<T>> next) => throw Describes();

    /// <summary>The server's <c>CreateField(name, value)</c>: a field named at run time (put it in a property called <c>_</c>).</summary>
    protected static object CreateField(string name, object? value) => throw Describes();

    /// <summary>The server's <c>CreateField(name, value, stored, analyzed)</c>.</summary>
    protected static object CreateField(string name, object? value, bool stored, bool analyzed) => throw Describes();

    /// <summary>The server's <c>CreateSpatialField(lat, lng)</c>.</summary>
    protected static object CreateSpatialField(double? latitude, double? longitude) => throw Describes();

    /// <summary>The server's <c>CreateSpatialField(wkt)</c>.</summary>
    protected static object CreateSpatialField(string? wkt) => throw Describes();

    private static InvalidOperationException Describes() => new("This method describes an index function for the server; it is not called on the client.");

    /// <summary>The JSON name of the member a field selector names.</summary>
    protected static string FieldName(LambdaExpression field, DocumentConventions conventions)
    {
        var body = field.Body is UnaryExpression { NodeType: ExpressionType.Convert } u ? u.Operand : field.Body;
        return body is MemberExpression m ? conventions.JsonName(m.Member) : throw new ArgumentException($"Name a field: x => x.Name, not {field}.", nameof(field));
    }
}

/// <summary>A map (and optionally reduce) index over one collection, written as C# lambdas.</summary>
/// <typeparam name="TDocument">The documents mapped (their collection is the conventions' name for the type).</typeparam>
/// <typeparam name="TReduceResult">The entries (and reduce results).</typeparam>
public abstract class AbstractIndexCreationTask<TDocument, TReduceResult> : AbstractIndexCreationTaskBase
{
    private readonly List<(LambdaExpression Field, string Value, int Kind)> _fieldOptions = [];

    /// <summary>The map: <c>docs =&gt; from d in docs select new { ... }</c>.</summary>
    protected Expression<Func<IEnumerable<TDocument>, IEnumerable>>? Map { get; set; }

    /// <summary>The reduce: <c>results =&gt; from r in results group r by r.Key into g select new { ... }</c>.</summary>
    protected Expression<Func<IEnumerable<TReduceResult>, IEnumerable>>? Reduce { get; set; }

    /// <summary>How a field is indexed: <c>Search</c> (analyzed full text) or <c>Exact</c>.</summary>
    protected void Index(Expression<Func<TReduceResult, object?>> field, string indexing) => _fieldOptions.Add((field, indexing, 0));

    /// <summary>The analyzer of a field (a Lucene.Net analyzer's name).</summary>
    protected void Analyze(Expression<Func<TReduceResult, object?>> field, string analyzer) => _fieldOptions.Add((field, analyzer, 1));

    /// <summary>Stores a field's values in the index.</summary>
    protected void Store(Expression<Func<TReduceResult, object?>> field) => _fieldOptions.Add((field, "Yes", 2));

    /// <inheritdoc />
    public override IndexDefinition CreateIndexDefinition(DocumentConventions conventions)
    {
        ArgumentNullException.ThrowIfNull(conventions);
        if (Map == null)
            throw new InvalidOperationException($"{GetType().Name} sets no Map.");
        foreach (var (field, value, kind) in _fieldOptions)
        {
            string name = FieldName(field, conventions);
            if (kind == 0)
                IndexesStrings[name] = value;
            else if (kind == 1)
                AnalyzersStrings[name] = value;
            else
                StoresStrings.Add(name);
        }
        return Definition([IndexExpressionWriter.Write(Map, conventions, "docs." + conventions.FindCollectionName(typeof(TDocument)))],
            Reduce == null ? null : IndexExpressionWriter.Write(Reduce, conventions, "results"), FieldOptions());
    }
}

/// <summary>A map index whose entries have the documents' shape.</summary>
public abstract class AbstractIndexCreationTask<TDocument> : AbstractIndexCreationTask<TDocument, TDocument>;

/// <summary>An index with several maps (each over its own collection) and optionally a reduce, written as C# lambdas.</summary>
/// <typeparam name="TReduceResult">The entries (and reduce results).</typeparam>
public abstract class AbstractMultiMapIndexCreationTask<TReduceResult> : AbstractIndexCreationTaskBase
{
    private readonly List<Func<DocumentConventions, string>> _maps = [];

    /// <summary>The reduce: <c>results =&gt; from r in results group r by r.Key into g select new { ... }</c>.</summary>
    protected Expression<Func<IEnumerable<TReduceResult>, IEnumerable>>? Reduce { get; set; }

    /// <summary>Adds the map of <typeparamref name="TSource"/>'s collection.</summary>
    protected void AddMap<TSource>(Expression<Func<IEnumerable<TSource>, IEnumerable>> map) =>
        _maps.Add(c => IndexExpressionWriter.Write(map, c, "docs." + c.FindCollectionName(typeof(TSource))));

    /// <summary>How a field is indexed: <c>Search</c> or <c>Exact</c>.</summary>
    protected void Index(Expression<Func<TReduceResult, object?>> field, string indexing) => _indexes.Add((field, indexing));

    private readonly List<(LambdaExpression, string)> _indexes = [];

    /// <inheritdoc />
    public override IndexDefinition CreateIndexDefinition(DocumentConventions conventions)
    {
        ArgumentNullException.ThrowIfNull(conventions);
        if (_maps.Count == 0)
            throw new InvalidOperationException($"{GetType().Name} adds no map.");
        foreach (var (field, value) in _indexes)
            IndexesStrings[FieldName(field, conventions)] = value;
        return Definition(_maps.Select(m => m(conventions)).ToList(), Reduce == null ? null : IndexExpressionWriter.Write(Reduce, conventions, "results"), FieldOptions());
    }
}

/// <summary>An index written in JavaScript: <c>map('Users', u =&gt; ({ Name: u.Name }))</c>, optionally with a reduce.</summary>
public abstract class AbstractJavaScriptIndexCreationTask : AbstractIndexCreationTaskBase
{
    /// <summary>The maps.</summary>
    protected HashSet<string> Maps { get; } = [];

    /// <summary>The reduce: <c>groupBy(x =&gt; x.Key).aggregate(g =&gt; ({ ... }))</c>.</summary>
    protected string? Reduce { get; set; }

    /// <summary>Field options by name.</summary>
    protected Dictionary<string, IndexFieldOptions> Fields { get; } = [];

    /// <inheritdoc />
    public override IndexDefinition CreateIndexDefinition(DocumentConventions conventions) => Definition([.. Maps], Reduce, Fields, javaScript: true);
}

/// <summary>Puts every index class of an assembly (RavenDB's <c>IndexCreation.CreateIndexesAsync</c>).</summary>
public static class IndexCreation
{
    /// <summary>Puts an instance of every non-abstract <see cref="AbstractIndexCreationTaskBase"/> in <paramref name="assembly"/> with a parameterless constructor, in one request.</summary>
    public static async Task CreateIndexesAsync(Assembly assembly, IDocumentStore store, string? database = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(assembly);
        ArgumentNullException.ThrowIfNull(store);
        var tasks = assembly.GetTypes()
            .Where(t => !t.IsAbstract && typeof(AbstractIndexCreationTaskBase).IsAssignableFrom(t) && t.GetConstructor(Type.EmptyTypes) != null)
            .Select(t => (AbstractIndexCreationTaskBase)Activator.CreateInstance(t)!)
            .ToList();
        await CreateIndexesAsync(tasks, store, database, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Puts these indexes, in one request.</summary>
    public static async Task CreateIndexesAsync(IEnumerable<AbstractIndexCreationTaskBase> indexes, IDocumentStore store, string? database = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(indexes);
        ArgumentNullException.ThrowIfNull(store);
        var definitions = indexes.Select(i => i.CreateIndexDefinition(store.Conventions)).ToArray();
        if (definitions.Length == 0)
            return;
        var maintenance = database == null ? store.Maintenance : store.Maintenance.ForDatabase(database);
        await maintenance.SendAsync(new PutIndexesOperation(definitions), cancellationToken).ConfigureAwait(false);
    }
}
