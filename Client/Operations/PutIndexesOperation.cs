using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary><c>PUT /databases/{db}/admin/indexes</c>: creates or replaces static indexes; answers their names.</summary>
public sealed class PutIndexesOperation(params IndexDefinition[] indexes) : IMaintenanceOperation<IReadOnlyList<string>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyList<string>> GetCommand(DocumentConventions conventions) => new Command(indexes);

    private sealed class Command(IndexDefinition[] indexes) : RavenCommand<IReadOnlyList<string>>
    {
        public override HttpRequestMessage CreateRequest(string? database)
        {
            var array = new JsonArray();
            foreach (var d in indexes)
            {
                var fields = new JsonObject();
                foreach (var (name, f) in d.Fields)
                    fields[name] = new JsonObject { ["Indexing"] = f.Indexing, ["Storage"] = f.Storage, ["Analyzer"] = f.Analyzer };
                bool js = d.JavaScript ?? !d.Maps.All(m => m.TrimStart().StartsWith("from", StringComparison.OrdinalIgnoreCase) || m.TrimStart().StartsWith("docs", StringComparison.OrdinalIgnoreCase));
                var sources = new JsonObject();
                foreach (var (name, source) in d.AdditionalSources)
                    sources[name] = source;
                array.Add(new JsonObject
                {
                    ["Name"] = d.Name,
                    ["Maps"] = new JsonArray(d.Maps.Select(m => (JsonNode?)JsonValue.Create(m)).ToArray()),
                    ["Reduce"] = d.Reduce,
                    ["Fields"] = fields,
                    ["AdditionalSources"] = sources,
                    ["OutputReduceToCollection"] = d.OutputReduceToCollection,
                    ["PatternForOutputReduceToCollectionReferences"] = d.PatternForOutputReduceToCollectionReferences,
                    ["PatternReferencesCollectionName"] = d.PatternReferencesCollectionName,
                    ["IndexType"] = js ? (d.Reduce == null ? "JavaScriptMap" : "JavaScriptMapReduce") : (d.Reduce == null ? "Map" : "MapReduce"),
                    ["Configuration"] = new JsonObject(),
                });
            }
            return new HttpRequestMessage(HttpMethod.Put, DatabasePath(database) + "/admin/indexes") { Content = JsonContent(new JsonObject { ["Indexes"] = array }) };
        }

        public override async Task<IReadOnlyList<string>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return (json["Results"]?.AsArray() ?? []).Select(r => (string?)r?["Index"] ?? "").ToList();
        }
    }
}
