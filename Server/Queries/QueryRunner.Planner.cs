using RavenLite.Server.Indexing;

namespace RavenLite.Server.Queries;

/// <summary>Choosing the index a query reads (or none: a collection scan), creating or widening an auto index when needed.</summary>
public sealed partial class QueryRunner
{
    /// <summary>The index the query reads, or null for a scan.</summary>
    private Indexing.Index? ChooseIndex(out bool created)
    {
        created = false;
        if (_query.Source.Index is { } name)
        {
            var index = _db.Indexes.Get(name) ?? throw new NotFoundException(RavenExceptionTypes.IndexDoesNotExist, $"Index '{name}' does not exist.");
            CheckFieldsIndexed(index.Compiled);
            return index;
        }
        if (_query.Source.AllDocs)
            return null;
        if (_query.GroupBy.Count > 0)
        {
            var (reduced, createdNow) = _db.Indexes.GetOrCreateAutoMapReduce(_query.Source.Collection!, _query.GroupBy, _query.GroupSums);
            created = createdNow;
            return reduced;
        }
        var fields = QueryFields();
        if (fields.Count == 0)
            return null;
        var (auto, isNew) = _db.Indexes.GetOrCreateAuto(_query.Source.Collection!, fields.Select(kv => new AutoField(kv.Key, kv.Value)).ToList());
        created = isNew;
        return auto;
    }

    /// <summary>
    /// <c>?debug=explain</c>: which index the query would read and why, without running it or creating an index
    /// (RavenDB's <c>{Results: [{Index, Reason}]}</c>).
    /// </summary>
    public static (string Index, string Reason) Explain(Databases.Database db, RqlQuery query, JsonElement parameters)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(query);
        var runner = new QueryRunner(db, query, parameters);
        if (query.Facets.Count > 0)
            runner._facets = FacetPlan.Resolve(query.Facets, runner.Resolve, runner.LoadJson);
        if (query.Source.Index is { } name)
        {
            var index = db.Indexes.Get(name) ?? throw new NotFoundException(RavenExceptionTypes.IndexDoesNotExist, $"Index '{name}' does not exist.");
            return (index.Name, "The query names the index");
        }
        if (query.Source.AllDocs)
            return ("AllDocs", "The query reads every document: a scan, no index");
        if (query.GroupBy.Count > 0)
        {
            string reduce = AutoMapReduce.Name(query.Source.Collection!, query.GroupBy, query.GroupSums);
            return (reduce, db.Indexes.Get(reduce) != null ? "The auto map-reduce index of this group by exists" : "No index groups by these fields: this auto map-reduce index will be created");
        }
        var fields = runner.QueryFields();
        if (fields.Count == 0)
            return ("collection/" + query.Source.Collection, "The query has no field to look up or sort by: a scan of the collection, no index");
        var (covering, autoName) = db.Indexes.PlanAuto(query.Source.Collection!, fields.Select(kv => new AutoField(kv.Key, kv.Value)).ToList());
        return (autoName, covering != null ? "The auto index covers every field the query uses"
            : "No auto index covers the query's fields: this one will be created (with the fields of the collection's other auto indexes)");
    }

    /// <summary>The document fields the where clause and order by use (not id()), each with "used by search()".</summary>
    private Dictionary<string, bool> QueryFields()
    {
        var fields = new Dictionary<string, bool>(StringComparer.Ordinal);
        if (_query.Where != null)
            CollectFields(_query.Where, fields);
        foreach (var o in _query.OrderBy)
        {
            if (o.Field is { IsId: false } f)
                fields.TryAdd(f.ToString(), false);
            foreach (var p in o.DistanceOf?.Paths() ?? [])
                fields.TryAdd(p.ToString(), false);
        }
        foreach (var sg in _query.Suggestions)
            if (!sg.Field.IsId)
                fields.TryAdd(sg.Field.ToString(), false);
        foreach (var path in _facets?.SelectMany(f => f.Fields()) ?? [])
            if (!path.IsId)
                fields.TryAdd(path.ToString(), false);
        return fields;
    }

    private static void CollectFields(RqlExpression e, Dictionary<string, bool> fields)
    {
        void Add(RqlPath p, bool search)
        {
            if (p.IsId)
                return;
            string name = p.ToString();
            fields[name] = fields.GetValueOrDefault(name) || search;
        }
        foreach (var child in e.Children)
            CollectFields(child, fields);
        switch (e)
        {
            case RqlFuzzy fuzzy:
                Add(fuzzy.Compare.Field, false);
                break;
            case RqlCompare c:
                Add(c.Field, false);
                break;
            case RqlBetween bt:
                Add(bt.Field, false);
                break;
            case RqlIn i:
                Add(i.Field, false);
                break;
            case RqlMethod m:
                Add(m.Field, m.IsSearch);
                break;
            case RqlSpatial sp:
                foreach (var p in sp.Target.Paths())
                    Add(p, false);
                break;
        }
    }

    /// <summary>400 when a static index is queried or sorted on a field its map does not output.</summary>
    private void CheckFieldsIndexed(CompiledIndex compiled)
    {
        // A facet may aggregate a field the index lacks (RavenDB counts it 0 per match).
        var conditions = new Dictionary<string, bool>(StringComparer.Ordinal);
        if (_query.Where != null)
            CollectFields(_query.Where, conditions);
        var aggregatedOnly = _facets?.SelectMany(f => f.Aggregations.Select(a => a.Field.ToString()))
            .Except(_facets.SelectMany(f => new[] { f.Field, f.RangeField }).Where(p => p != null).Select(p => p!.ToString()))
            .Except(conditions.Keys).Except(_query.OrderBy.Where(o => o.Field != null).Select(o => o.Field!.ToString())).ToHashSet(StringComparer.Ordinal) ?? [];
        foreach (string name in QueryFields().Keys.Where(n => !aggregatedOnly.Contains(n)))
            if (compiled.Field(name) == null)
                throw new InvalidQueryException($"The field '{name}' is not indexed by index '{_query.Source.Index}'; its fields are: {string.Join(", ", compiled.Fields.Select(x => x.Name))}.");
    }
}
