// RavenLite server entry point: `dotnet run -c Release --project Server` serves http://127.0.0.1:8080 with data in ./data.
// Settings: Server/appsettings.json < RAVENLITE_* environment variables < command line (--DataDir ./x --ServerUrl http://127.0.0.1:9090).
using RavenLite.Server.Hosting;

// `RavenLite.Server healthcheck [settings]`: asks /readyz of the server these settings describe (exit 0 when ready);
// the container image's HEALTHCHECK runs it, so the image needs no HTTP client of its own.
if (args.Length > 0 && args[0] == "healthcheck")
    return await Health.ProbeAsync(ServerHost.ReadOptions(args[1..])).ConfigureAwait(false);
return await StandaloneServer.RunAsync(args).ConfigureAwait(false);
