using RavenLite.Server.Changes;
using RavenLite.Server.Databases;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// The changes API: <c>GET /databases/{db}/changes</c> upgraded to a WebSocket (<see cref="ChangesConnection"/>),
/// fed by the database's <see cref="ChangeFeed"/>. The connection holds the database's lease while it is open; the
/// database closes its connections when it closes.
/// </summary>
public static class ChangesEndpoints
{
    /// <summary>Maps the route.</summary>
    public static void Map(IEndpointRouteBuilder app) =>
        app.MapGet("/databases/{db}/changes", DatabaseRoute.Handle(Changes)).Requires(Access.DatabaseRead);

    private static async Task Changes(HttpContext context, Database db)
    {
        if (!context.WebSockets.IsWebSocketRequest)
            throw new BadRequestException("/changes is a WebSocket: connect with ws:// (RavenDB's changes API).");
        using var socket = await context.WebSockets.AcceptWebSocketAsync().ConfigureAwait(false);
        using var connection = new ChangesConnection();
        db.Documents.Changes.Subscribe(connection);
        try
        {
            await connection.RunAsync(socket, context.RequestAborted).ConfigureAwait(false);
        }
        finally
        {
            db.Documents.Changes.Unsubscribe(connection);
        }
    }
}
