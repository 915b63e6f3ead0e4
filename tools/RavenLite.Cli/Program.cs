using System.CommandLine;
using RavenLite.Cli;

// ravenlite check|stats|dump-tree|snapshot|restore|compact <dir> ... — offline tools for a storage data directory.
// Opening runs journal recovery exactly as the server would; nothing else is written.
var dirArgument = new Argument<DirectoryInfo>("dir") { Description = "Storage environment directory (holds data, headers, journal/)." };
var treeArgument = new Argument<string>("tree") { Description = "Tree name." };
var limitOption = new Option<int>("--limit") { Description = "Maximum entries to print (default 100).", DefaultValueFactory = _ => 100 };

var check = new Command("check", "Run the consistency checker over every tree and the free space; exit code 1 on any finding.") { dirArgument };
check.SetAction(r => DataDirCommands.Check(r.GetValue(dirArgument)!, Console.Out));

var stats = new Command("stats", "Print environment and per-tree statistics.") { dirArgument };
stats.SetAction(r => DataDirCommands.Stats(r.GetValue(dirArgument)!, Console.Out));

var dump = new Command("dump-tree", "Print the entries of one tree in key order.") { dirArgument, treeArgument, limitOption };
dump.SetAction(r => DataDirCommands.DumpTree(r.GetValue(dirArgument)!, r.GetValue(treeArgument)!, r.GetValue(limitOption), Console.Out));

var fileArgument = new Argument<FileInfo>("file") { Description = "Snapshot page-stream file (docs/format/backup.md)." };
var filesArgument = new Argument<FileInfo[]>("files") { Description = "Page-stream files: a full snapshot, then incremental ones in order.", Arity = ArgumentArity.OneOrMore };
var targetArgument = new Argument<DirectoryInfo>("target") { Description = "A new, empty directory for the result." };

var snapshot = new Command("snapshot", "Write a hot snapshot of the environment (every page one read transaction reaches) to a page-stream file, with progress.") { dirArgument, fileArgument };
snapshot.SetAction(r => DataDirCommands.Snapshot(r.GetValue(dirArgument)!, r.GetValue(fileArgument)!, Console.Out));

var restore = new Command("restore", "Build an environment in <target> from snapshot page-stream files, then check it.") { targetArgument, filesArgument };
restore.SetAction(r => DataDirCommands.Restore(r.GetValue(targetArgument)!, r.GetValue(filesArgument)!, Console.Out));

var compact = new Command("compact", "Rewrite the environment without free pages into <target> (the source is left as it is), with progress; then check the result.") { dirArgument, targetArgument };
compact.SetAction(r => DataDirCommands.Compact(r.GetValue(dirArgument)!, r.GetValue(targetArgument)!, Console.Out));

var root = new RootCommand("RavenLite data-directory tools") { check, stats, dump, snapshot, restore, compact };
return root.Parse(args).Invoke();
