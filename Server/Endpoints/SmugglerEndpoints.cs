using Microsoft.AspNetCore.WebUtilities;
using Microsoft.Net.Http.Headers;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Http;
using RavenLite.Server.Operations;
using RavenLite.Server.Security;
using RavenLite.Server.Smuggler;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// Export and import (RavenDB's smuggler endpoints): <c>POST /databases/{db}/smuggler/export?operationId=</c> answers the
/// <c>.ravendbdump</c> as it is written from one snapshot (<see cref="DatabaseExporter"/>); <c>POST
/// /databases/{db}/smuggler/import?operationId=</c> reads one from a multipart form (the clients' <c>importOptions</c> and
/// file parts) or from the raw body (<see cref="DatabaseImporter"/>). Both are operations: their counts are the result
/// <c>/operations/state</c> and the changes API give; an import that fails (a truncated or malformed dump) is a 400
/// saying what was imported before it stopped.
/// </summary>
public static class SmugglerEndpoints
{
    private const string ResultType = "Raven.Client.Documents.Smuggler.SmugglerResult, Raven.Client";

    /// <summary>Maps the routes.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapPost("/databases/{db}/smuggler/export", DatabaseRoute.Handle(Export)).Requires(Access.DatabaseRead);
        app.MapPost("/databases/{db}/smuggler/import", DatabaseRoute.Handle(Import, drainBodyOnMissing: true)).Requires(Access.DatabaseReadWrite);
    }

    private static OperationState Start(HttpContext context, Database db, string kind)
    {
        long id = RequestParsing.QueryLong(context.Request, "operationId") ?? db.Operations.NextId();
        return db.Operations.Start(id, kind);
    }

    private static async Task Export(HttpContext context, Database db)
    {
        // The options (RavenDB's DatabaseSmugglerExportOptions, JSON): OperateOnTypes picks the sections.
        var body = await RequestBody.ReadAsync(context, 1 << 20).ConfigureAwait(false);
        ExportTypes types;
        if (body.Span.TrimStart(" \t\r\n"u8) is not [(byte)'{', ..])
            types = ExportTypes.All; // no options, or a form the Studio's download posts
        else
        {
            using var options = Documents.DocumentJson.Parse(body, 8);
            types = ExportTypes.Parse(options.RootElement);
        }
        var state = Start(context, db, "DatabaseExport");
        context.Response.Headers[HeaderNames.ContentDisposition] = $"attachment; filename=\"{db.Name}-{DateTime.UtcNow.ToString("yyyy-MM-dd-HH-mm", CultureInfo.InvariantCulture)}.ravendbdump\"";
        SmugglerCounts? counts = null;
        try
        {
            await StreamedResponse.RunAsync(context, "application/octet-stream", stream =>
            {
                using var output = stream.AsStream();
                counts = DatabaseExporter.Export(db, output, stream.Cancellation, types);
            }).ConfigureAwait(false);
            if (counts == null)
                throw new OperationCanceledException("The export ended before it was written.");
            state.ResultJson = counts.ToJson(ResultType);
            state.AddProcessed(counts.Read("Documents"));
            state.Complete();
        }
        catch (Exception e)
        {
            state.Fault(RavenExceptionTypes.RavenException, "The export did not complete: " + e.Message, 500);
            throw;
        }
        finally
        {
            db.Operations.Finished(state);
        }
    }

    private static async Task Import(HttpContext context, Database db)
    {
        var state = Start(context, db, "DatabaseImport");
        var options = context.RequestServices.GetRequiredService<ServerOptions>();
        var importer = new DatabaseImporter(db, options.MaxAttachmentBytes);
        try
        {
            var request = context.Request;
            if (MediaTypeHeaderValue.TryParse(request.ContentType, out var media) && media.MediaType.Equals("multipart/form-data", StringComparison.OrdinalIgnoreCase))
            {
                string boundary = HeaderUtilities.RemoveQuotes(media.Boundary).Value ?? throw new BadRequestException("The multipart body has no boundary.");
                var reader = new MultipartReader(boundary, request.Body) { BodyLengthLimit = null };
                bool imported = false;
                for (var section = await reader.ReadNextSectionAsync(context.RequestAborted).ConfigureAwait(false); section != null;
                     section = await reader.ReadNextSectionAsync(context.RequestAborted).ConfigureAwait(false))
                {
                    var disposition = section.GetContentDispositionHeader();
                    if (disposition?.Name.Value == "importOptions")
                        continue; // the options name item types; RavenLite imports every kind it reads
                    await importer.ImportAsync(section.Body, context.RequestAborted).ConfigureAwait(false);
                    imported = true;
                }
                if (!imported)
                    throw new BadRequestException("The import form has no file part (the .ravendbdump).");
            }
            else
            {
                await importer.ImportAsync(RequestBody.Decode(request), context.RequestAborted).ConfigureAwait(false);
            }
        }
        catch (InvalidDataException e)
        {
            state.Fault(RavenExceptionTypes.BadRequest, e.Message, 400);
            db.Operations.Finished(state);
            throw new BadRequestException($"The import stopped: {e.Message} Imported before that: {importer.Counts.Read("Documents")} document(s), {importer.Counts.Read("Attachments")} attachment(s), {importer.Counts.Read("Indexes")} index(es).");
        }
        catch (Exception e)
        {
            var (status, type, message) = ErrorHandlingMiddleware.Classify(e);
            state.Fault(type, message, status);
            db.Operations.Finished(state);
            throw;
        }
        byte[] result = importer.Counts.ToJson(ResultType);
        state.ResultJson = result;
        state.AddProcessed(importer.Counts.Read("Documents"));
        state.Complete();
        db.Operations.Finished(state);
        await JsonResponse.SendAsync(context, 200, result).ConfigureAwait(false);
    }
}
