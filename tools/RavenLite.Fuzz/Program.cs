using RavenLite.Fuzz;

// Under the libFuzzer bridge (tools/fuzz.sh sets its shared-memory and pipe variables) one target runs input after input;
// otherwise every file named (or in a directory named) is replayed once, the way CI replays the corpora.
if (args.Length < 1 || !FuzzTargets.Names.Contains(args[0]))
{
    Console.Error.WriteLine($"usage: RavenLite.Fuzz TARGET [FILE|DIR...]; targets: {string.Join(", ", FuzzTargets.Names)}");
    return 2;
}
if (Environment.GetEnvironmentVariable("__LIBFUZZER_SHM_ID") != null)
{
    // Instrumented code writes to SharpFuzz's edge map, which exists only inside Run: the target is made on the first
    // input, and never disposed (the map is gone when Run returns; the process ends instead).
    IFuzzTarget? fuzzed = null;
    SharpFuzz.Fuzzer.LibFuzzer.Run(input => (fuzzed ??= FuzzTargets.Create(args[0])).Run(input));
    Environment.Exit(0);
}
using var target = FuzzTargets.Create(args[0]);
int failed = 0, count = 0;
foreach (var file in args.Skip(1).SelectMany(p => Directory.Exists(p) ? Directory.EnumerateFiles(p, "*", SearchOption.AllDirectories).Order(StringComparer.Ordinal) : (IEnumerable<string>)[p]))
{
    count++;
    try
    {
        target.Run(File.ReadAllBytes(file));
    }
    catch (Exception e)
    {
        failed++;
        Console.Error.WriteLine($"{file}: {e}");
    }
}
Console.WriteLine($"{args[0]}: {count} input(s) replayed, {failed} failed");
return failed == 0 ? 0 : 1;
