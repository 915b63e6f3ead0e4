using BenchmarkDotNet.Running;

BenchmarkSwitcher.FromAssembly(typeof(RavenLite.Benchmarks.HotPathBenchmarks).Assembly).Run(args);
