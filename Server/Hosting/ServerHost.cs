using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Endpoints;
using RavenLite.Server.Http;
using RavenLite.Server.Logging;
using RavenLite.Server.Monitoring;
using RavenLite.Server.Security;

namespace RavenLite.Server.Hosting;

/// <summary>
/// Composition of the server: configuration (appsettings.json &lt; RAVENLITE_ environment variables
/// &lt; command line), validated <see cref="ServerOptions"/>, Kestrel on the one configured address,
/// the database registry, the error middleware and every endpoint group. Used by Program and by
/// tests (which start it on 127.0.0.1:0 with a temp data dir).
/// </summary>
public static class ServerHost
{
    /// <summary>The settings <see cref="Build"/> would use (appsettings.json &lt; RAVENLITE_ variables &lt; command line), for commands that do not start a server.</summary>
    public static ServerOptions ReadOptions(string[] args)
    {
        var configuration = new ConfigurationBuilder()
            .AddJsonFile(Path.Combine(AppContext.BaseDirectory, "appsettings.json"), optional: true)
            .AddEnvironmentVariables("RAVENLITE_")
            .AddCommandLine(args)
            .Build();
        var options = new ServerOptions();
        configuration.Bind(options);
        return options;
    }

    // Kept whole: the composition root, services and middleware in the order they run, read top to bottom.
    /// <summary>
    /// Builds (does not start) the server. Throws <see cref="InvalidOperationException"/> for invalid settings.
    /// <paramref name="logging"/> adds to the console logging (tests capture the server's warnings with it).
    /// </summary>
    public static WebApplication Build(string[] args, Action<ServerOptions>? configure = null, Action<ILoggingBuilder>? logging = null)
    {
        var builder = WebApplication.CreateBuilder(new WebApplicationOptions { Args = args, ContentRootPath = AppContext.BaseDirectory });
        // Precedence: appsettings.json < RAVENLITE_ variables < command line (re-added last to win).
        builder.Configuration.AddEnvironmentVariables("RAVENLITE_");
        builder.Configuration.AddCommandLine(args);
        ServerOptions.CheckNames(args);
        var options = new ServerOptions();
        builder.Configuration.Bind(options);
        configure?.Invoke(options);
        options.Validate();

        builder.Services.AddSingleton(options);
        builder.Services.AddSingleton<DatabaseKeys>();
        builder.Services.AddSingleton<DatabaseRegistry>();
        builder.Services.AddSingleton(new Memory.MemoryBudget((long)options.MemoryBudgetMB << 20));
        builder.Services.AddSingleton<Operations.ServerOperations>();
        builder.Services.AddSingleton<ServerClientConfiguration>();
        builder.Services.AddSingleton<Cluster.ClusterNode>();
        builder.Services.AddSingleton<Cluster.DatabaseGroups>();
        builder.Services.AddSingleton<Cluster.ClusterTransactions>();
        builder.Services.AddSingleton<Cluster.DatabaseRecords>();
        builder.Services.AddSingleton<Cluster.ServerItems>();
        builder.Services.AddSingleton<Cluster.IServerItemFollower, Cluster.ClientConfigurationFollower>();
        builder.Services.AddSingleton(_ => new Indexing.Analysis.CustomAnalysis());
        builder.Services.AddSingleton<Cluster.IServerItemFollower, Cluster.CustomAnalysisFollower>();
        builder.Services.AddSingleton<Cluster.ClusterObserver>();
        builder.Services.AddSingleton<Cluster.ClusterPeers>();
        builder.Services.AddSingleton<Cluster.NodeClient>();
        builder.Services.AddHostedService<ClusterHost>();
        builder.Services.AddSingleton<Tcp.TcpServer>();
        builder.Services.AddHostedService(s => s.GetRequiredService<Tcp.TcpServer>());
        StudioFiles.AddServices(builder.Services);
        builder.Services.AddSingleton<RequestMetrics>();
        ServerMetrics.AddServices(builder.Services, options);
        Health.AddServices(builder.Services);
        OpenApiDocument.AddServices(builder.Services);
        Security.SecurityHost.AddServices(builder, options);
        if (options.JsonLogs)
        {
            // One JSON object per line, with the request's scope (TraceId, SpanId, RequestPath) on request logs.
            builder.Logging.AddJsonConsole(o =>
            {
                o.IncludeScopes = true;
                o.TimestampFormat = "yyyy-MM-ddTHH:mm:ss.fffZ";
                o.UseUtcTimestamp = true;
            });
        }
        else
        {
            builder.Logging.AddSimpleConsole(o =>
            {
                o.SingleLine = true;
                o.TimestampFormat = "HH:mm:ss ";
            });
        }
        var logMode = new Logging.LogMode(Enum.TryParse<LogLevel>(builder.Configuration["Logging:LogLevel:Default"], out var level) ? level : LogLevel.Information);
        builder.Services.AddSingleton(logMode);
        builder.Logging.AddFilter((_, _, l) => logMode.Allows(l));
        logging?.Invoke(builder.Logging);
        builder.WebHost.UseUrls(options.ServerUrl);
        builder.WebHost.ConfigureKestrel(k =>
        {
            k.AddServerHeader = false;
            k.Limits.MaxRequestBodySize = null; // bulk insert streams without bound; other bodies are checked by RequestBody
            k.Limits.MaxRequestHeadersTotalSize = 64 << 10; // beyond: 431
            k.Limits.MaxRequestLineSize = 16 << 10; // beyond: 414
            // Slow and greedy clients (docs/deployment.md "Limits"): a connection cap, a deadline for the headers, and a
            // minimum transfer rate both ways, so a client that trickles a request or stops reading an answer is dropped
            // instead of holding a connection, a thread's work or the answer's buffers.
            k.Limits.MaxConcurrentConnections = options.MaxConnections;
            k.Limits.MaxConcurrentUpgradedConnections = options.MaxConnections;
            k.Limits.RequestHeadersTimeout = TimeSpan.FromSeconds(options.RequestHeadersTimeoutSeconds);
            var rate = new Microsoft.AspNetCore.Server.Kestrel.Core.MinDataRate(options.MinDataRateBytesPerSecond, TimeSpan.FromSeconds(options.MinDataRateGraceSeconds));
            k.Limits.MinRequestBodyDataRate = rate;
            k.Limits.MinResponseDataRate = rate;
        });
        // Requests run on the thread that read them, and answers are sent by the thread that writes them, instead of
        // each step being queued to the thread pool; ThreadPoolHop moves every request but single-document writes to
        // the pool at once. With the merger answering those writes on its own thread (MergedCommand completeInline),
        // a single-document PUT takes fewer context switches and less server CPU (docs/benchmarks.md, writes).
        builder.WebHost.UseSockets(s => s.UnsafePreferInlineScheduling = true);
        builder.Services.Configure<HostOptions>(h => h.ShutdownTimeout = TimeSpan.FromSeconds(30));

        var app = builder.Build();
        // Compiled C# indexes survive restarts here (a restart otherwise recompiles each with Roslyn before its database answers).
        Indexing.Scripting.CSharpIndexCompiler.DiskCache = Path.Combine(Path.GetFullPath(options.DataDir), "System", "CompiledIndexes");
        try
        {
            _ = app.Services.GetRequiredService<DatabaseRegistry>(); // scan DataDir now: an unusable data dir fails start-up, not the first request
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw new InvalidOperationException($"DataDir '{options.DataDir}' cannot be used: {e.Message}", e);
        }
        app.UseMiddleware<RequestLog>();
        app.UseMiddleware<ThreadPoolHop>();
        app.UseMiddleware<ErrorHandlingMiddleware>();
        Security.SecurityHost.Use(app, options);
        app.UseMiddleware<KnownRaftIndex>();
        app.UseMiddleware<GroupTopologyHeaders>();
        app.UseWebSockets(new WebSocketOptions { KeepAliveInterval = TimeSpan.FromSeconds(30) }); // the changes API
        TopologyEndpoints.Map(app);
        ClusterEndpoints.Map(app);
        DatabaseEndpoints.Map(app);
        SecretEndpoints.Map(app);
        DatabaseGroupEndpoints.Map(app);
        DocumentEndpoints.Map(app);
        BulkDocsEndpoints.Map(app);
        HiLoEndpoints.Map(app);
        CounterEndpoints.Map(app);
        IdentityEndpoints.Map(app);
        CompareExchangeEndpoints.Map(app);
        AttachmentEndpoints.Map(app);
        RevisionEndpoints.Map(app);
        ExpirationEndpoints.Map(app);
        TimeSeriesEndpoints.Map(app);
        OperationEndpoints.Map(app);
        StatsEndpoints.Map(app);
        StreamEndpoints.Map(app);
        MultiGetEndpoints.Map(app);
        ChangesEndpoints.Map(app);
        SubscriptionEndpoints.Map(app);
        SmugglerEndpoints.Map(app);
        BackupEndpoints.Map(app);
        ReplicationEndpoints.Map(app);
        EtlEndpoints.Map(app);
        ConfigurationEndpoints.Map(app);
        AnalysisEndpoints.Map(app);
        DatabaseStateEndpoints.Map(app);
        OngoingTaskEndpoints.Map(app);
        LogEndpoints.Map(app);
        CertificateEndpoints.Map(app);
        BulkInsertEndpoints.Map(app);
        QueryEndpoints.Map(app);
        OperationsByQueryEndpoints.Map(app);
        PatchEndpoints.Map(app);
        IndexEndpoints.Map(app);
        StudioEndpoints.Map(app);
        StudioApiEndpoints.Map(app);
        Health.Map(app);
        OpenApiDocument.Map(app);
        ServerMetrics.Map(app, options);
        _ = app.Services.GetRequiredService<RequestMetrics>(); // listens from the first request on
        if (options.Studio)
            StudioFiles.Map(app);
        app.MapFallback(context => ErrorHandlingMiddleware.WriteErrorAsync(context, 400, RavenExceptionTypes.RouteNotFound,
            $"There is no handler for {context.Request.Method} {context.Request.Path}.", $"There is no handler for {context.Request.Method} {context.Request.Path}.")).Requires(Access.Anonymous);

        var logger = app.Services.GetRequiredService<ILogger<ServerOptions>>();
        var lifetime = app.Services.GetRequiredService<IHostApplicationLifetime>();
        lifetime.ApplicationStarted.Register(() => Log.Listening(logger, string.Join(", ", Addresses(app))));
        // Graceful shutdown: after Kestrel stops taking requests, close every database (drains mergers, flushes storage).
        lifetime.ApplicationStopping.Register(() => Log.Stopping(logger));
        lifetime.ApplicationStopped.Register(() =>
        {
            var registry = app.Services.GetRequiredService<DatabaseRegistry>();
            int open = registry.OpenNames.Count;
            registry.Dispose();
            Log.Stopped(logger, open);
        });
        Log.Options(logger, options.Describe());
        if (options.Security.Secured)
        {
            var certificate = app.Services.GetRequiredService<Security.ServerCertificate>().Current;
            var registry = app.Services.GetRequiredService<Security.CertificateRegistry>();
            Log.Secured(logger, certificate.Subject, certificate.Thumbprint, registry.All.Count, registry.WellKnown.Count);
        }
        else if (!ServerOptions.IsLoopback(new Uri(options.ServerUrl).Host))
            Log.UnsecuredNonLoopback(logger, options.ServerUrl);
        return app;
    }

    /// <summary>The addresses Kestrel actually bound (port 0 resolved).</summary>
    public static IReadOnlyList<string> Addresses(WebApplication app) =>
        app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()?.Addresses.ToList() ?? [];
}
