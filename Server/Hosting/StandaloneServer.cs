using RavenLite.Server.Configuration;

namespace RavenLite.Server.Hosting;

/// <summary>
/// The server as a process of its own — the server's entry point and <c>ravenlite serve</c>: builds it from the settings
/// (appsettings.json &lt; RAVENLITE_* variables &lt; <c>args</c>), serves until the process is told to stop (Ctrl+C,
/// SIGTERM), then closes every database. Exit code 0, or 2 when it cannot start (the reason on stderr).
/// </summary>
public static class StandaloneServer
{
    public static async Task<int> RunAsync(string[] args)
    {
        // Socket completions run on the socket engine threads instead of being queued to the thread pool: one thread
        // hand-off less per receive and per send. Kestrel then starts each request on the engine thread (inline
        // scheduling, ServerHost), and ThreadPoolHop moves all but single-document writes to the thread pool at once, so
        // a slow handler never holds an engine thread (the gain on concurrent PUTs is in docs/benchmarks.md, writes). The
        // runtime reads this variable once, when the first socket is created, so it is set before anything else; setting
        // it to 0 beforehand keeps the default. Only a server process does this: in-process hosts (the tests, the
        // embedded server) keep the runtime default.
        if (Environment.GetEnvironmentVariable("DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS") is null)
            Environment.SetEnvironmentVariable("DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS", "1");
        WebApplication app;
        try
        {
            app = ServerHost.Build(args);
        }
        catch (InvalidOperationException e)
        {
            Console.Error.WriteLine("RavenLite cannot start: " + e.Message);
            return 2;
        }
        await using (app.ConfigureAwait(false))
        {
            try
            {
                await app.StartAsync().ConfigureAwait(false);
            }
            catch (IOException e)
            {
                // Kestrel could not bind (the port is taken, or the address is not this machine's).
                var options = app.Services.GetRequiredService<ServerOptions>();
                Console.Error.WriteLine($"RavenLite cannot start: ServerUrl '{options.ServerUrl}' cannot be listened on: {e.Message}");
                return 2;
            }
            await app.WaitForShutdownAsync().ConfigureAwait(false);
        }
        return 0;
    }
}
