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

// ravenlite certs ca|server|client: the certificates of a secured server (docs/security.md).
var outOption = new Option<DirectoryInfo>("--out") { Description = "Directory to write the files into.", Required = true };
var caOption = new Option<FileInfo>("--ca") { Description = "The CA's PFX (from `certs ca`).", Required = true };
var caPasswordOption = new Option<string?>("--ca-password") { Description = "The CA PFX's password, if it has one." };
var passwordOption = new Option<string?>("--password") { Description = "Password for the written PFX and PEM key (default: none)." };
var daysOption = new Option<int>("--days") { Description = "Days of validity.", DefaultValueFactory = _ => 365 };
var caNameOption = new Option<string>("--name") { Description = "The CA's common name.", DefaultValueFactory = _ => "RavenLite CA" };
var caDaysOption = new Option<int>("--days") { Description = "Days of validity.", DefaultValueFactory = _ => 3650 };
var certsCa = new Command("ca", "Create a self-signed CA: ca.pfx, ca.pem, ca.key.pem.") { outOption, caNameOption, caDaysOption, passwordOption };
certsCa.SetAction(r => CertCommands.Ca(r.GetValue(outOption)!, r.GetValue(caNameOption)!, r.GetValue(caDaysOption), r.GetValue(passwordOption), Console.Out));
var serverNameOption = new Option<string>("--name") { Description = "File name stem.", DefaultValueFactory = _ => "server" };
var dnsOption = new Option<string[]>("--dns") { Description = "DNS names the server is reached by (repeatable).", DefaultValueFactory = _ => ["localhost"], AllowMultipleArgumentsPerToken = true };
var ipOption = new Option<string[]>("--ip") { Description = "IP addresses the server is reached by (repeatable).", DefaultValueFactory = _ => ["127.0.0.1", "::1"], AllowMultipleArgumentsPerToken = true };
var certsServer = new Command("server", "Create a server certificate signed by the CA: {name}.pfx (with the CA), {name}.pem, {name}.key.pem.") { caOption, caPasswordOption, outOption, serverNameOption, dnsOption, ipOption, daysOption, passwordOption };
certsServer.SetAction(r => CertCommands.Server(r.GetValue(caOption)!, r.GetValue(caPasswordOption), r.GetValue(outOption)!, r.GetValue(serverNameOption)!, r.GetValue(dnsOption)!, r.GetValue(ipOption)!, r.GetValue(daysOption), r.GetValue(passwordOption), Console.Out));
var clientNameOption = new Option<string>("--name") { Description = "The client's common name and file name stem.", Required = true };
var certsClient = new Command("client", "Create a client certificate signed by the CA: {name}.pfx (with the CA), {name}.pem, {name}.key.pem; prints its thumbprint.") { caOption, caPasswordOption, outOption, clientNameOption, daysOption, passwordOption };
certsClient.SetAction(r => CertCommands.Client(r.GetValue(caOption)!, r.GetValue(caPasswordOption), r.GetValue(outOption)!, r.GetValue(clientNameOption)!, r.GetValue(daysOption), r.GetValue(passwordOption), Console.Out));
var certs = new Command("certs", "Create the certificates of a secured server with .NET's CertificateRequest (docs/security.md).") { certsCa, certsServer, certsClient };

// ravenlite serve [settings]: the server itself, with the standalone server's settings (--DataDir, --ServerUrl, ...;
// docs/deployment.md), which it reads and checks itself: every token after `serve` is passed on.
var serve = new Command("serve", "Run the server: data in ./data, http://127.0.0.1:8080, the Studio at /studio/; settings as the standalone server takes them (--DataDir ./x --ServerUrl http://127.0.0.1:9090; docs/deployment.md).")
{
    TreatUnmatchedTokensAsErrors = false,
};
serve.SetAction((r, _) => RavenLite.Server.Hosting.StandaloneServer.RunAsync([.. r.UnmatchedTokens]));

var root = new RootCommand("RavenLite: the server, data-directory and certificate tools") { serve, check, stats, dump, snapshot, restore, compact, certs };
return root.Parse(args).Invoke();
