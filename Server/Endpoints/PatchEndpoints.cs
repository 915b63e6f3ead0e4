using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Security;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>PATCH /databases/{db}/docs?id=</c> (RavenDB's <c>PatchOperation</c>): body <c>{"Patch":{"Script","Values"},
/// "PatchIfMissing":{..}?}</c>, <c>If-Match</c> for a change vector (with <c>skipPatchIfChangeVectorMismatch=true</c> a
/// mismatch skips instead of 409), <c>test=true</c> runs the patch and answers without writing. Answers 200
/// <c>{Status, ModifiedDocument, OriginalDocument, ChangeVector, LastModified, Collection, Debug}</c>; 404 when the
/// document does not exist and nothing creates it; 400 for a script that does not parse or fails.
/// </summary>
public static class PatchEndpoints
{
    /// <summary>Maps the route.</summary>
    public static void Map(IEndpointRouteBuilder app) => app.MapMethods("/databases/{db}/docs", ["PATCH"], DatabaseRoute.Handle(Patch)).Requires(Access.DatabaseReadWrite);

    private static async Task Patch(HttpContext context, Database db)
    {
        string id = RequestParsing.Query(context.Request, "id") is { Length: > 0 } i ? i : throw new BadRequestException("Query string parameter 'id' is required.");
        db.Documents.ValidateIdToWrite(id);
        string? expected = RequestParsing.Header(context.Request, "If-Match");
        bool skip = string.Equals(RequestParsing.Query(context.Request, "skipPatchIfChangeVectorMismatch"), "true", StringComparison.OrdinalIgnoreCase);
        bool test = string.Equals(RequestParsing.Query(context.Request, "test"), "true", StringComparison.OrdinalIgnoreCase);
        using var body = await RequestBody.ReadJsonAsync(context, "patch").ConfigureAwait(false);
        var root = body.RootElement;
        if (root.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("The body must be {\"Patch\":{\"Script\":\"...\",\"Values\":{...}},\"PatchIfMissing\":{...}}.");
        using var patch = DocumentPatch.Parse(root.TryGetProperty("Patch", out var p) ? p : default, root.TryGetProperty("PatchIfMissing", out var pm) ? pm : default,
            root.TryGetProperty("CreateIfMissing", out var cm) ? cm : default, "The patch", PatchLimits.Of(context.RequestServices.GetRequiredService<ServerOptions>()));
        var command = new DelegateCommand<DocumentPatch.Outcome>(ctx =>
        {
            var outcome = patch.Apply(ctx, id, expected, skip);
            if (test && outcome.Write != null)
                throw new TestPatchDone(outcome); // rolls the transaction back: a test patch writes nothing
            return outcome;
        });
        DocumentPatch.Outcome result;
        try
        {
            await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
            result = command.Result!;
        }
        catch (TestPatchDone done)
        {
            result = done.Outcome;
        }
        if (result.Status == DocumentPatch.Status.DocumentDoesNotExist)
        {
            await JsonResponse.EmptyAsync(context, 404).ConfigureAwait(false);
            return;
        }
        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteString("Status", result.Status.ToString());
            Write(w, "ModifiedDocument", result.Modified);
            Write(w, "OriginalDocument", result.Original);
            if (result.Output.Count > 0)
            {
                w.WriteStartObject("Debug");
                w.WriteStartArray("Info");
                foreach (string line in result.Output)
                    w.WriteStringValue(line);
                w.WriteEndArray();
                w.WriteEndObject();
            }
            else
            {
                w.WriteNull("Debug");
            }
            if (result.Write is { } write)
            {
                w.WriteString("ChangeVector", write.ChangeVector);
                w.WriteString("LastModified", JsonDates.FormatDate(write.LastModified));
                w.WriteString("Collection", write.Collection);
            }
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    private static void Write(Utf8JsonWriter w, string name, byte[]? json)
    {
        w.WritePropertyName(name);
        if (json == null)
        {
            w.WriteNullValue();
            return;
        }
        using var doc = JsonDocument.Parse(json);
        doc.RootElement.WriteTo(w);
    }

    /// <summary>Ends a <c>test=true</c> patch's transaction without committing it.</summary>
    private sealed class TestPatchDone(DocumentPatch.Outcome outcome) : Exception("test patch")
    {
        public DocumentPatch.Outcome Outcome { get; } = outcome;
    }
}
