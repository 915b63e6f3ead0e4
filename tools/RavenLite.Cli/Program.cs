using System.CommandLine;
using RavenLite.Cli;

// ravenlite check|stats|dump-tree <dir> ... — offline tools for a storage data directory.
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

var root = new RootCommand("RavenLite data-directory tools") { check, stats, dump };
return root.Parse(args).Invoke();
