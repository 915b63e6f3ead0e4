using System.Diagnostics;
using System.IO.Compression;
using System.Net;
using System.Text.Json;
using System.Xml.Linq;
using RavenLite.TestKit;

namespace RavenLite.Packages.Tests;

/// <summary>
/// docs/packages.md: the packages used the way a .NET developer uses them, outside the repository. The solution's
/// Release build is packed (<c>dotnet pack --no-build</c>, at a version of its own so no cached package can stand in)
/// into a feed; each package's metadata is checked; then, in a fresh directory with its own NuGet package folder,
/// the tool is installed and serves, and new console and xunit projects add the packages from the feed and run the
/// samples' code: the client against the tool's server, the embedded server on one data directory three times (the
/// last without disposing it: the process exit closes it cleanly), which the tool's server then opens, the test
/// driver's test. The samples' own project files build on the feed too.
/// </summary>
public sealed class ConsumerTests(ITestOutputHelper output)
{
    private static readonly TimeSpan CommandLimit = TimeSpan.FromMinutes(10);

    private static readonly string[] Products = ["RavenLite.Storage", "RavenLite.Server", "RavenLite.Client", "RavenLite.TestDriver", "RavenLite.Embedded", "ravenlite"];

    [Fact]
    public async Task The_packages_install_and_run_as_an_application_uses_them()
    {
        string repo = RepositoryRoot.Find();
        using var work = new TempDirectory("ravenlite-consumer");
        string version = $"{VersionOf(repo)}.test.{DateTime.UtcNow:yyyyMMddHHmmss}";
        string feed = Path.Combine(work.Path, "artifacts");
        var env = new Dictionary<string, string> { ["NUGET_PACKAGES"] = Path.Combine(work.Path, "packages") };
        await WriteNuGetConfig(work.Path, feed);

        await Run("dotnet", ["pack", "RavenLite.sln", "-c", "Release", "--no-build", "-p:BuildStudio=true", $"-p:PackageOutputPath={feed}/", $"-p:PackageVersion={version}"], repo, env);
        // The products and nothing else: tests, tools, the bench and the samples are not packable.
        Assert.Equal(Products.Order(StringComparer.Ordinal), Directory.GetFiles(feed, "*.nupkg").Select(f => Path.GetFileName(f)[..^$".{version}.nupkg".Length]).Order(StringComparer.Ordinal));
        foreach (string id in Products)
            CheckPackage(repo, feed, id, version);

        // The tool: installed from the feed, `ravenlite serve` answers with the Studio included.
        string tools = Path.Combine(work.Path, "tools");
        await Run("dotnet", ["tool", "install", "ravenlite", "--tool-path", tools, "--add-source", feed, "--version", version], work.Path, env);
        string ravenlite = Path.Combine(tools, "ravenlite");
        var (served, url) = await ServerLauncher.StartCommandAsync(ravenlite, ["serve", "--DataDir", Path.Combine(work.Path, "served"), "--ServerUrl", "http://127.0.0.1:0"]);
        try
        {
            using var http = new HttpClient { BaseAddress = url, Timeout = TimeSpan.FromSeconds(30) };
            using var studio = new HttpRequestMessage(HttpMethod.Get, "/studio/");
            studio.Headers.Accept.ParseAdd("text/html");
            var page = await http.SendAsync(studio);
            Assert.Equal(HttpStatusCode.OK, page.StatusCode);
            Assert.Contains("<script", await page.Content.ReadAsStringAsync(), StringComparison.Ordinal);

            // The client: a new console project on RavenLite.Client, running the quick-start sample against the tool's server.
            string quickStart = await NewConsole(work.Path, "quickstart", "RavenLite.Client", version, env, Path.Combine(repo, "samples", "QuickStart", "Program.cs"));
            string printed = await Run("dotnet", ["run", "--no-build", "--", url.ToString().TrimEnd('/')], quickStart, env);
            Assert.Equal(["stored people/1-A", "over 30: Ann (34, Oslo)", "people in Rome: 10000"], Lines(printed));
        }
        finally
        {
            ServerLauncher.Kill(served);
        }

        // The embedded server: a new console project on RavenLite.Embedded, run twice on one data directory.
        string embedded = await NewConsole(work.Path, "embedded", "RavenLite.Embedded", version, env, Path.Combine(repo, "samples", "Embedded", "Program.cs"));
        Assert.True(File.Exists(Path.Combine(embedded, "bin", "Debug", "net10.0", "studio", "index.html")), "the Studio's files are copied into the application's output");
        string data = Path.Combine(work.Path, "embedded-data");
        Assert.Contains("products: 1", Lines(await Run("dotnet", ["run", "--no-build", "--", data], embedded, env)));
        Assert.Contains("products: 2", Lines(await Run("dotnet", ["run", "--no-build", "--", data], embedded, env)));

        // An application that never disposes the server: the process exit closes the databases cleanly (the sample
        // without its last step, logging the server's information lines).
        string program = await File.ReadAllTextAsync(Path.Combine(embedded, "Program.cs"));
        const string Dispose = "await EmbeddedServer.Instance.DisposeAsync();";
        const string Options = "new EmbeddedServerOptions { DataDirectory = dataDirectory }";
        Assert.Contains(Dispose, program, StringComparison.Ordinal);
        Assert.Contains(Options, program, StringComparison.Ordinal);
        await File.WriteAllTextAsync(Path.Combine(embedded, "Program.cs"), program.Replace(Dispose, "", StringComparison.Ordinal)
            .Replace(Options, "new EmbeddedServerOptions { DataDirectory = dataDirectory, LogLevel = Microsoft.Extensions.Logging.LogLevel.Information }", StringComparison.Ordinal));
        await Run("dotnet", ["build"], embedded, env);
        string exited = await Run("dotnet", ["run", "--no-build", "--", data], embedded, env);
        Assert.Contains("products: 3", Lines(exited));
        Assert.Contains("RavenLite stopped cleanly: 1 open database(s) closed, their mergers drained and journals synced", exited, StringComparison.Ordinal);

        // The same data directory, opened by the standalone server (the tool).
        (served, url) = await ServerLauncher.StartCommandAsync(ravenlite, ["serve", "--DataDir", data, "--ServerUrl", "http://127.0.0.1:0"]);
        try
        {
            using var http = new HttpClient { BaseAddress = url, Timeout = TimeSpan.FromSeconds(30) };
            var answer = await http.PostAsync("/databases/Shop/queries", new StringContent("""{"Query":"from Products"}"""));
            Assert.Equal(HttpStatusCode.OK, answer.StatusCode);
            using var json = JsonDocument.Parse(await answer.Content.ReadAsStringAsync());
            Assert.Equal(3, json.RootElement.GetProperty("TotalResults").GetInt32());
        }
        finally
        {
            ServerLauncher.Kill(served);
        }

        // The test driver: a new xunit project on RavenLite.TestDriver, running the sample's test.
        string tests = Path.Combine(work.Path, "shop-tests");
        Directory.CreateDirectory(tests);
        await File.WriteAllTextAsync(Path.Combine(tests, "ShopTests.csproj"), XunitProject(repo));
        await Run("dotnet", ["add", "package", "RavenLite.TestDriver", "--version", version], tests, env);
        File.Copy(Path.Combine(repo, "samples", "TestDriver", "ShopTests.cs"), Path.Combine(tests, "ShopTests.cs"));
        Assert.Contains("Passed!", await Run("dotnet", ["test"], tests, env), StringComparison.Ordinal);

        // The samples' own project files, copied with the files they use, build on the feed (samples/nuget.config).
        string copy = Path.Combine(work.Path, "repository");
        CopyTree(Path.Combine(repo, "samples"), Path.Combine(copy, "samples"));
        File.Copy(Path.Combine(repo, "Version.props"), Path.Combine(copy, "Version.props"));
        Directory.CreateSymbolicLink(Path.Combine(copy, "artifacts"), feed);
        foreach (string sample in new[] { "QuickStart", "Embedded", "TestDriver" })
            await Run("dotnet", ["build", Path.Combine(copy, "samples", sample), $"-p:RavenLiteVersion={version}"], copy, env);
    }

    /// <summary>A package's contents and metadata as docs/packages.md promises them.</summary>
    private static void CheckPackage(string repo, string feed, string id, string version)
    {
        string file = Path.Combine(feed, $"{id}.{version}.nupkg");
        Assert.True(File.Exists(file), $"{file} was not packed");
        Assert.True(File.Exists(Path.ChangeExtension(file, ".snupkg")), $"{id} has no symbols package");
        using var zip = ZipFile.OpenRead(file);
        var entries = zip.Entries.Select(e => e.FullName).ToHashSet(StringComparer.Ordinal);
        XNamespace ns;
        XElement metadata;
        using (var nuspec = zip.GetEntry($"{id}.nuspec")!.Open())
        {
            var root = XDocument.Load(nuspec).Root!;
            ns = root.Name.Namespace;
            metadata = root.Element(ns + "metadata")!;
        }
        string? Meta(string name) => metadata.Element(ns + name)?.Value;
        Assert.Equal(id, Meta("id"));
        Assert.Equal(version, Meta("version"));
        Assert.Equal("The RavenLite developers", Meta("authors"));
        Assert.True(Meta("description") is { Length: > 40 } d && d != "Package Description", $"{id}: description '{Meta("description")}'");
        Assert.Equal("MIT", Meta("license"));
        Assert.Equal("README.md", Meta("readme"));
        Assert.Contains("README.md", entries);
        Assert.Equal("https://github.com/ravenlite/ravenlite", Meta("projectUrl"));
        var repository = metadata.Element(ns + "repository")!;
        Assert.Equal("git", repository.Attribute("type")?.Value);
        Assert.Equal("https://github.com/ravenlite/ravenlite", repository.Attribute("url")?.Value);
        if (GitHead(repo) is { } head)
            Assert.Equal(head, repository.Attribute("commit")?.Value);
        if (id == "ravenlite")
        {
            Assert.Equal("DotnetTool", metadata.Element(ns + "packageTypes")?.Element(ns + "packageType")?.Attribute("name")?.Value);
            Assert.Contains("tools/net10.0/any/ravenlite.dll", entries);
            Assert.Contains("tools/net10.0/any/studio/index.html", entries);
            return;
        }
        Assert.Contains($"lib/net10.0/{id}.dll", entries);
        Assert.Contains($"lib/net10.0/{id}.xml", entries); // XML docs for IntelliSense
        if (id == "RavenLite.Server")
        {
            Assert.Contains("studio/index.html", entries);
            Assert.Contains("buildTransitive/RavenLite.Server.targets", entries);
            Assert.DoesNotContain(entries, e => e.EndsWith("appsettings.json", StringComparison.Ordinal));
        }
        var dependencies = metadata.Descendants(ns + "dependency").Where(e => e.Attribute("id")!.Value.StartsWith("RavenLite.", StringComparison.Ordinal)).ToList();
        Assert.All(dependencies, e => Assert.Equal(version, e.Attribute("version")!.Value));
    }

    /// <summary><c>dotnet new console</c>, the package added from the feed, the sample's program in place of the template's; built.</summary>
    private async Task<string> NewConsole(string work, string name, string package, string version, Dictionary<string, string> env, string program)
    {
        string dir = Path.Combine(work, name);
        await Run("dotnet", ["new", "console", "-o", dir, "--framework", "net10.0"], work, env);
        await Run("dotnet", ["add", "package", package, "--version", version], dir, env);
        File.Copy(program, Path.Combine(dir, "Program.cs"), overwrite: true);
        await Run("dotnet", ["build"], dir, env);
        return dir;
    }

    /// <summary>A test project as `dotnet new xunit` makes one, on the xunit packages the repository's tests use.</summary>
    private static string XunitProject(string repo)
    {
        var versions = XDocument.Load(Path.Combine(repo, "Directory.Packages.props")).Descendants("PackageVersion")
            .ToDictionary(e => e.Attribute("Include")!.Value, e => e.Attribute("Version")!.Value, StringComparer.Ordinal);
        string Reference(string id) => $"""    <PackageReference Include="{id}" Version="{versions[id]}" />""";
        return $"""
            <Project Sdk="Microsoft.NET.Sdk">
              <PropertyGroup>
                <TargetFramework>net10.0</TargetFramework>
                <ImplicitUsings>enable</ImplicitUsings>
                <Nullable>enable</Nullable>
                <IsPackable>false</IsPackable>
              </PropertyGroup>
              <ItemGroup>
            {Reference("Microsoft.NET.Test.Sdk")}
            {Reference("xunit")}
            {Reference("xunit.runner.visualstudio")}
              </ItemGroup>
            </Project>
            """;
    }

    /// <summary>The feed first, beside this machine's sources; packages already on the machine are read from its folder.</summary>
    private static Task WriteNuGetConfig(string dir, string feed)
    {
        string machine = Environment.GetEnvironmentVariable("NUGET_PACKAGES") is { Length: > 0 } p ? p
            : Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.UserProfile), ".nuget", "packages");
        return File.WriteAllTextAsync(Path.Combine(dir, "nuget.config"), $"""
            <?xml version="1.0" encoding="utf-8"?>
            <configuration>
              <packageSources>
                <add key="ravenlite-artifacts" value="{feed}" />
              </packageSources>
              <fallbackPackageFolders>
                <add key="machine" value="{machine}" />
              </fallbackPackageFolders>
            </configuration>
            """);
    }

    /// <summary>Runs a command to its end (within <see cref="CommandLimit"/>); its output, or a failure showing it.</summary>
    private async Task<string> Run(string file, string[] args, string directory, Dictionary<string, string> env)
    {
        var psi = new ProcessStartInfo(file) { WorkingDirectory = directory, RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (string a in args)
            psi.ArgumentList.Add(a);
        // The test host's MSBuild variables would point the commands at this build's MSBuild, not their own.
        foreach (string key in psi.Environment.Keys.Where(k => k.StartsWith("MSBuild", StringComparison.OrdinalIgnoreCase)).ToList())
            psi.Environment.Remove(key);
        foreach (var (key, value) in env)
            psi.Environment[key] = value;
        psi.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        psi.Environment["DOTNET_NOLOGO"] = "1";
        var started = Stopwatch.StartNew();
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        using var limit = new CancellationTokenSource(CommandLimit);
        try
        {
            await p.WaitForExitAsync(limit.Token);
        }
        catch (OperationCanceledException)
        {
            p.Kill(entireProcessTree: true);
            throw new TimeoutException($"{file} {string.Join(' ', args)} ran past {CommandLimit.TotalMinutes} minutes:\n{await stdout}\n{await stderr}");
        }
        string text = await stdout;
        output.WriteLine($"{file} {string.Join(' ', args)}: exit {p.ExitCode} in {started.Elapsed.TotalSeconds:0.0} s");
        Assert.True(p.ExitCode == 0, $"{file} {string.Join(' ', args)} (in {directory}) exited {p.ExitCode}:\n{text}\n{await stderr}");
        return text;
    }

    private static string[] Lines(string text) => text.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);

    private static void CopyTree(string from, string to)
    {
        foreach (string file in Directory.GetFiles(from, "*", SearchOption.AllDirectories))
        {
            string relative = Path.GetRelativePath(from, file);
            if (relative.Split(Path.DirectorySeparatorChar).Any(part => part is "bin" or "obj"))
                continue;
            Directory.CreateDirectory(Path.GetDirectoryName(Path.Combine(to, relative))!);
            File.Copy(file, Path.Combine(to, relative));
        }
    }

    private static string VersionOf(string repo)
    {
        var props = XDocument.Load(Path.Combine(repo, "Version.props"));
        return $"{props.Descendants("VersionPrefix").Single().Value}-{props.Descendants("VersionSuffix").Single().Value}";
    }

    private static string? GitHead(string repo)
    {
        try
        {
            var psi = new ProcessStartInfo("git", ["rev-parse", "HEAD"]) { WorkingDirectory = repo, RedirectStandardOutput = true, RedirectStandardError = true };
            using var p = Process.Start(psi)!;
            string head = p.StandardOutput.ReadToEnd().Trim();
            p.WaitForExit();
            return p.ExitCode == 0 ? head : null;
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return null; // no git: the commit is not checked
        }
    }
}
