using ArchUnitNET.Loader;
using ArchUnitNET.xUnit;
using static ArchUnitNET.Fluent.ArchRuleDefinition;

namespace RavenLite.Server.Tests.Architecture;

/// <summary>
/// The server's layers (docs/architecture.md, "Layers"), checked on the compiled assemblies: every rule says which
/// folders a layer may not reach, so a <c>using</c> or a qualified name that points up fails here, naming the type
/// and the dependency.
/// </summary>
public sealed class LayerTests
{
    private const string Root = "RavenLite.Server.";

    private static readonly ArchUnitNET.Domain.Architecture Server = new ArchLoader()
        .LoadAssemblies(typeof(RavenLite.Server.Hosting.ServerHost).Assembly, typeof(Storage.StorageEnvironment).Assembly)
        .Build();

    /// <summary>Shared vocabulary below everything: errors, settings, log messages, the memory budget, JSON dates.</summary>
    private static readonly string[] Foundation = ["Errors", "Configuration", "Logging", "Memory", "Formatting"];

    /// <summary>The feed of committed changes: written by documents and extensions, read by the changes connections.</summary>
    private static readonly string[] Feed = ["Changes"];

    /// <summary>The extensions that hook into document writes (<c>IDocumentExtension</c>).</summary>
    private static readonly string[] Extensions = ["Attachments", "Counters", "Revisions", "TimeSeries", "CompareExchange", "Expiration"];

    /// <summary>Documents, the merger and the document extensions.</summary>
    private static readonly string[] Core = ["Documents", "TransactionMerger", .. Extensions];

    /// <summary>What works on whole databases: the database aggregate and the services it composes.</summary>
    private static readonly string[] Services = ["Databases", "Batches", "Indexing", "Queries", "Operations", "Smuggler", "Backups", "Subscriptions", "BulkInsert", "Replication", "Etl", "Cluster"];

    /// <summary>Transports: HTTP plumbing, authentication and authorization, metrics, the handlers, the TCP port.</summary>
    private static readonly string[] Web = ["Http", "Security", "Monitoring", "Endpoints", "Tcp"];

    private static readonly string[] Hosting = ["Hosting"];

    private static ArchUnitNET.Fluent.Syntax.Elements.Types.GivenTypesConjunctionWithDescription In(params string[] folders) =>
        Types().That().ResideInNamespaceMatching($@"^{Root.Replace(".", @"\.", StringComparison.Ordinal)}({string.Join('|', folders)})(\..*)?$")
            .As(string.Join(", ", folders));

    private static void Forbid(string[] layer, params string[][] above) =>
        Types().That().Are(In(layer)).Should().NotDependOnAny(In([.. above.SelectMany(a => a)])).Check(Server);

    [Fact]
    public void Foundation_depends_on_no_server_layer() => Forbid(Foundation, Feed, Core, Services, Web, Hosting);

    [Fact]
    public void The_change_feed_depends_only_on_the_foundation() => Forbid(Feed, Core, Services, Web, Hosting);

    [Fact]
    public void Documents_and_extensions_depend_on_no_service_transport_or_host() => Forbid(Core, Services, Web, Hosting);

    [Fact]
    public void Documents_reach_extensions_only_through_the_extension_interface() => Forbid(["Documents"], Extensions, ["TransactionMerger"]);

    [Fact]
    public void Services_depend_on_no_transport_or_host() => Forbid(Services, Web, Hosting);

    [Fact]
    public void Http_plumbing_depends_on_no_handler_or_host() => Forbid(["Http"], ["Endpoints", "Tcp", "Security"], Hosting);

    [Fact]
    public void Handlers_and_the_tcp_port_depend_on_no_host() => Forbid(["Endpoints", "Tcp", "Security", "Monitoring"], Hosting);

    [Fact]
    public void Only_the_host_knows_the_handlers() => Forbid([.. Foundation, .. Feed, .. Core, .. Services, "Http", "Security", "Monitoring", "Tcp"], ["Endpoints"]);

    [Fact]
    public void Storage_knows_nothing_of_the_server() =>
        Types().That().ResideInAssembly(typeof(Storage.StorageEnvironment).Assembly).Should()
            .NotDependOnAny(Types().That().ResideInAssembly(typeof(RavenLite.Server.Hosting.ServerHost).Assembly)).Check(Server);

    [Fact]
    public void Every_server_type_lives_in_a_known_layer() =>
        Types().That().ResideInAssembly(typeof(RavenLite.Server.Hosting.ServerHost).Assembly).And().ResideInNamespaceMatching(@"^RavenLite\.Server\.")
            .Should().Be(In([.. Foundation, .. Feed, .. Core, .. Services, .. Web, .. Hosting])).Check(Server);
}
