using RavenLite.TestDriver;

namespace RavenLite.Client.Tests;

/// <summary>One in-process server per test class; each test takes its own database from it.</summary>
public sealed class DriverFixture : IAsyncLifetime
{
    public RavenTestDriver Driver { get; private set; } = null!;

    public async Task InitializeAsync() => Driver = await RavenTestDriver.StartAsync();

    public async Task DisposeAsync() => await Driver.DisposeAsync();
}
