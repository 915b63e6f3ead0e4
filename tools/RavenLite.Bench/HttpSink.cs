using System.Buffers;
using System.Diagnostics;
using System.Net;
using System.Security.Cryptography;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace RavenLite.Bench;

/// <summary>
/// The floor HTTP itself sets under attachment uploads: this program run as <c>http-sink</c>, a child process whose
/// Kestrel (server GC, as the server's) reads every <c>PUT /sink</c> body into a 4 MiB buffer, as the attachment
/// upload does, and throws it away (no storage; with <c>?sha256</c> it hashes the body first, as any store that keeps
/// content by its hash must), answering 201. The same uploads from the same client against it give the rate no
/// attachment store behind HTTP on this machine can pass. It also plays the changes API's transport alone
/// (<see cref="Push"/>) for the changes row's floor, and a server that does no work for the TLS row's floor:
/// <c>PUT /put?answer=N</c> reads the body and answers 201 with N bytes of JSON (Content-Length), over plain HTTP or,
/// given a certificate, over Kestrel's HTTPS with the secured server's settings.
/// </summary>
internal sealed class HttpSink : IDisposable
{
    private readonly Process _process;

    private HttpSink(Process process, Uri url)
    {
        _process = process;
        Url = url;
    }

    public Uri Url { get; }

    /// <summary>
    /// Runs the sink in this process until killed (the hidden <c>http-sink</c> command); prints its address on stdout.
    /// With <paramref name="certificate"/> (a PFX) it listens over HTTPS as the secured server does (TLS 1.2/1.3, client
    /// certificates allowed and accepted); with <paramref name="inlineScheduling"/> its socket transport runs requests
    /// on the thread that read them, as the server's does.
    /// </summary>
    public static int Serve(string? certificate, bool inlineScheduling)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        if (inlineScheduling)
            builder.WebHost.UseSockets(s => s.UnsafePreferInlineScheduling = true);
        var serverCertificate = certificate == null ? null : RavenLite.Cli.CertificateFactory.LoadPfx(certificate, null);
        builder.WebHost.ConfigureKestrel(o =>
        {
            o.AddServerHeader = false;
            o.Limits.MaxRequestBodySize = null;
            o.Listen(IPAddress.Loopback, 0, listen =>
            {
                if (serverCertificate != null)
                    listen.UseHttps(new Microsoft.AspNetCore.Server.Kestrel.Https.HttpsConnectionAdapterOptions
                    {
                        ServerCertificate = serverCertificate,
                        SslProtocols = System.Security.Authentication.SslProtocols.Tls12 | System.Security.Authentication.SslProtocols.Tls13,
                        ClientCertificateMode = Microsoft.AspNetCore.Server.Kestrel.Https.ClientCertificateMode.AllowCertificate,
                        ClientCertificateValidation = (_, _, _) => true,
                    });
            });
        });
        var app = builder.Build();
        app.MapPut("/put", async context =>
        {
            var buffer = ArrayPool<byte>.Shared.Rent(64 << 10);
            try
            {
                while (await context.Request.Body.ReadAsync(buffer) > 0)
                {
                }
                int length = int.Parse(context.Request.Query["answer"].ToString(), System.Globalization.CultureInfo.InvariantCulture);
                var answer = buffer.AsMemory(0, Math.Max(length, 2));
                answer.Span.Fill((byte)' ');
                answer.Span[0] = (byte)'{';
                answer.Span[^1] = (byte)'}';
                context.Response.StatusCode = StatusCodes.Status201Created;
                context.Response.ContentType = "application/json; charset=utf-8";
                context.Response.ContentLength = answer.Length;
                await context.Response.Body.WriteAsync(answer, context.RequestAborted);
            }
            finally
            {
                ArrayPool<byte>.Shared.Return(buffer);
            }
        });
        app.MapPut("/sink", async context =>
        {
            var buffer = ArrayPool<byte>.Shared.Rent(4 << 20);
            using var sha = context.Request.Query.ContainsKey("sha256") ? IncrementalHash.CreateHash(HashAlgorithmName.SHA256) : null;
            try
            {
                int n;
                while ((n = await context.Request.Body.ReadAsync(buffer.AsMemory(0, 4 << 20))) > 0)
                    sha?.AppendData(buffer, 0, n);
                sha?.GetHashAndReset();
            }
            finally
            {
                ArrayPool<byte>.Shared.Return(buffer);
            }
            context.Response.StatusCode = StatusCodes.Status201Created;
        });
        app.UseWebSockets();
        app.Map("/push", Push);
        app.Start();
        Console.WriteLine("listening " + app.Urls.First());
        app.WaitForShutdown();
        return 0;
    }

    /// <summary>
    /// The changes API's transport alone: a WebSocket whose client first sends one notification (JSON); then, as the
    /// server's changes connection does, every 20 ms one frame of the notifications due at <c>?rate=</c> per second
    /// (at most 1,024 a frame), each a copy of that one, as a JSON array — until the client closes.
    /// </summary>
    private static async Task Push(HttpContext context)
    {
        if (!context.WebSockets.IsWebSocketRequest)
        {
            context.Response.StatusCode = StatusCodes.Status400BadRequest;
            return;
        }
        double rate = double.Parse(context.Request.Query["rate"].ToString(), System.Globalization.CultureInfo.InvariantCulture);
        using var socket = await context.WebSockets.AcceptWebSocketAsync();
        var first = new byte[64 * 1024];
        var got = await socket.ReceiveAsync(first, context.RequestAborted);
        var notification = first.AsMemory(0, got.Count).ToArray().AsMemory(); // its own copy: the watch below receives into the buffer
        using var closed = CancellationTokenSource.CreateLinkedTokenSource(context.RequestAborted);
        var watch = Task.Run(async () =>
        {
            try
            {
                while ((await socket.ReceiveAsync(first, closed.Token)).MessageType != System.Net.WebSockets.WebSocketMessageType.Close)
                {
                }
            }
            catch (Exception e) when (e is OperationCanceledException or System.Net.WebSockets.WebSocketException)
            {
            }
            closed.Cancel();
        });
        var frame = new ArrayBufferWriter<byte>(1024 * (notification.Length + 1) + 2);
        var started = Stopwatch.StartNew();
        long sent = 0;
        try
        {
            while (!closed.IsCancellationRequested)
            {
                await Task.Delay(20, closed.Token);
                long n = Math.Min(1024, (long)(rate * started.Elapsed.TotalSeconds) - sent);
                if (n <= 0)
                    continue;
                frame.ResetWrittenCount();
                frame.Write("["u8);
                for (long i = 0; i < n; i++)
                {
                    if (i > 0)
                        frame.Write(","u8);
                    frame.Write(notification.Span);
                }
                frame.Write("]"u8);
                await socket.SendAsync(frame.WrittenMemory, System.Net.WebSockets.WebSocketMessageType.Text, true, closed.Token);
                sent += n;
            }
        }
        catch (Exception e) when (e is OperationCanceledException or System.Net.WebSockets.WebSocketException)
        {
        }
        await watch;
    }

    /// <summary>Starts the sink as a child process (see <see cref="Serve"/> for the options) and waits for its address.</summary>
    public static HttpSink Start(string? certificate = null, bool inlineScheduling = false)
    {
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true };
        psi.ArgumentList.Add(typeof(HttpSink).Assembly.Location);
        psi.ArgumentList.Add("http-sink");
        if (certificate != null)
        {
            psi.ArgumentList.Add("--certificate");
            psi.ArgumentList.Add(certificate);
        }
        if (inlineScheduling)
            psi.ArgumentList.Add("--inline-scheduling");
        psi.Environment["DOTNET_gcServer"] = "1";
        var process = Process.Start(psi) ?? throw new InvalidOperationException("could not start the HTTP sink");
        var read = process.StandardOutput.ReadLineAsync();
        if (!read.Wait(TimeSpan.FromSeconds(30)) || read.Result is not { } line || !line.StartsWith("listening ", StringComparison.Ordinal))
        {
            process.Kill();
            throw new InvalidOperationException("the HTTP sink did not start");
        }
        return new HttpSink(process, new Uri(line["listening ".Length..]));
    }

    /// <summary>CPU time the sink process used so far (user + system).</summary>
    public double CpuSeconds()
    {
        _process.Refresh();
        return _process.TotalProcessorTime.TotalSeconds;
    }

    public void Dispose()
    {
        _process.Kill();
        _process.WaitForExit(10_000);
        _process.Dispose();
    }
}
