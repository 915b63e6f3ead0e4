// RavenLite server entry point: `dotnet run -c Release --project Server` serves http://127.0.0.1:8080 with data in ./data.
// Settings: Server/appsettings.json < RAVENLITE_* environment variables < command line (--DataDir ./x --ServerUrl http://127.0.0.1:9090).
using RavenLite.Server.Configuration;
using RavenLite.Server.Hosting;

// Socket completions run on the socket engine threads instead of being queued to the thread pool: one thread
// hand-off less per receive and per send. Kestrel then starts each request on the engine thread (inline scheduling,
// ServerHost), and ThreadPoolHop moves all but single-document writes to the thread pool at once, so a slow handler
// never holds an engine thread (the gain on concurrent PUTs is in docs/benchmarks.md, writes). The runtime reads this variable once, when
// the first socket is created, so it is set before anything else; setting it to 0 beforehand keeps the default.
// Only the server process does this: in-process hosts (the tests) keep the runtime default.
if (Environment.GetEnvironmentVariable("DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS") is null)
    Environment.SetEnvironmentVariable("DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS", "1");

// `RavenLite.Server healthcheck [settings]`: asks /readyz of the server these settings describe (exit 0 when ready);
// the container image's HEALTHCHECK runs it, so the image needs no HTTP client of its own.
if (args.Length > 0 && args[0] == "healthcheck")
    return await Health.ProbeAsync(ServerHost.ReadOptions(args[1..])).ConfigureAwait(false);

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
return 0;
