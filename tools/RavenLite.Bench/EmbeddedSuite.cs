using System.Diagnostics;
using RavenLite.Client.Linq;
using RavenLite.Embedded;

namespace RavenLite.Bench;

/// <summary>
/// The embedded server's startup (docs/packages.md): a new process (this program as <c>embedded-child</c>) starts
/// <see cref="EmbeddedServer"/> on a data directory, gets a store for database Shop and answers one query; the time is
/// from spawning the process to its report that the query answered. On a fresh directory each time (the database is
/// created), and on one existing directory holding 100,000 documents and the query's auto index. The floor is the same
/// process started with nothing to do (the .NET runtime's own start), in the same run.
/// </summary>
internal sealed class EmbeddedSuite(bool quick, string workDir)
{
    private const string Answered = "answered";

    public IEnumerable<BenchResult> Run()
    {
        int runs = quick ? 3 : 10;
        yield return Measure("embedded start, fresh dir", "ravenlite", runs, i => ["query", Path.Combine(workDir, $"fresh-{i}")]);
        string existing = Path.Combine(workDir, "existing");
        Spawn(["fill", existing, quick ? "10000" : "100000"]);
        yield return Measure("embedded start, existing dir", "ravenlite", runs, _ => ["query", existing]);
        yield return Measure("embedded start, fresh dir", "process-start", runs, _ => ["nothing"]);
        yield return Measure("embedded start, existing dir", "process-start", runs, _ => ["nothing"]);
    }

    private static BenchResult Measure(string workload, string engine, int runs, Func<int, string[]> args)
    {
        var times = new List<double>();
        for (int i = 0; i < runs; i++)
            times.Add(Spawn(args(i)).TotalMilliseconds);
        times.Sort();
        double P(double q) => times[Math.Min(times.Count - 1, (int)Math.Ceiling(q * times.Count) - 1)];
        double seconds = times.Sum() / 1000;
        return new BenchResult("embedded", workload, engine, "sync", runs, seconds, runs / seconds, null, null, null, null, null, P(0.5), P(0.99), null);
    }

    /// <summary>Runs the child to its report; the time from spawning it to the report line.</summary>
    private static TimeSpan Spawn(string[] args)
    {
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };
        psi.ArgumentList.Add(typeof(EmbeddedSuite).Assembly.Location);
        psi.ArgumentList.Add("embedded-child");
        foreach (string a in args)
            psi.ArgumentList.Add(a);
        var started = Stopwatch.StartNew();
        using var p = Process.Start(psi)!;
        var stderr = p.StandardError.ReadToEndAsync();
        TimeSpan? reported = null;
        for (string? line = p.StandardOutput.ReadLine(); line != null; line = p.StandardOutput.ReadLine())
            if (line == Answered)
                reported ??= started.Elapsed;
        if (!p.WaitForExit(TimeSpan.FromMinutes(5)))
            p.Kill(entireProcessTree: true);
        return p.ExitCode == 0 && reported is { } t ? t : throw new InvalidOperationException($"embedded-child {string.Join(' ', args)} failed ({p.ExitCode}): {stderr.Result}");
    }

    /// <summary>The child: <c>nothing</c>, <c>fill DIR N</c> (bulk-inserts N products, then queries once so the auto index exists) or <c>query DIR</c>.</summary>
    public static async Task<int> ChildAsync(string[] args)
    {
        if (args[0] == "nothing")
        {
            Console.WriteLine(Answered);
            return 0;
        }
        var server = EmbeddedServer.Instance;
        await server.StartServerAsync(new EmbeddedServerOptions { DataDirectory = args[1], ServeStudio = false });
        var store = await server.GetDocumentStoreAsync("Shop");
        if (args[0] == "fill")
        {
            await using var bulk = store.BulkInsert();
            for (int i = 0; i < int.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture); i++)
                await bulk.StoreAsync(new Product { Name = "Product " + i, Price = i % 100 });
        }
        using (var session = store.OpenAsyncSession())
        {
            var query = session.Query<Product>().Where(p => p.Price == 42);
            _ = await (args[0] == "fill" ? query.Customize(x => x.WaitForNonStaleResults(TimeSpan.FromMinutes(5))) : query).ToListAsync();
        }
        Console.WriteLine(Answered);
        await server.DisposeAsync();
        return 0;
    }

    private sealed class Product
    {
        public string? Id { get; set; }
        public string Name { get; set; } = "";
        public int Price { get; set; }
    }
}
