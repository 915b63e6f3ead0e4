// RavenLite server entry point: `dotnet run -c Release --project Server` serves http://127.0.0.1:8080 with data in ./data.
// Settings: Server/appsettings.json < RAVENLITE_* environment variables < command line (--DataDir ./x --ServerUrl http://127.0.0.1:9090).
using RavenLite.Server.Hosting;

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
await app.RunAsync().ConfigureAwait(false);
return 0;
