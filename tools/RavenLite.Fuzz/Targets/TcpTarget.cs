using System.Net;
using System.Net.Sockets;
using System.Text;
using Microsoft.Extensions.DependencyInjection;
using RavenLite.Server.Replication;
using RavenLite.Server.Tcp;

namespace RavenLite.Fuzz.Targets;

/// <summary>
/// The TCP port's protocols from a hostile peer (docs/reliability.md "Fuzzing"): the input's first byte picks what comes
/// before the rest of it — nothing (the negotiation header itself is fuzzed), a valid subscription header (then worker
/// options and acknowledgements), or a valid replication header (then batches). The peer sends it all and closes its
/// side; the server must answer or close and then close too, within the time limit, and log no error.
/// </summary>
public sealed class TcpTarget : IFuzzTarget
{
    private static readonly TimeSpan Limit = TimeSpan.FromSeconds(10);
    private readonly FuzzServer _server = new();
    private readonly int _port;

    public TcpTarget()
    {
        SeedData.Put(_server);
        FuzzServer.Expect(_server.SendToDatabase(HttpMethod.Put, "/subscriptions", FuzzServer.Json("""{"Name":"sub","Query":"from Orders"}""")), HttpStatusCode.Created);
        _port = _server.Services.GetRequiredService<TcpServer>().Port.GetAwaiter().GetResult();
    }

    public void Run(ReadOnlySpan<byte> input)
    {
        if (input.IsEmpty)
            return;
        string prefix = (input[0] % 3) switch
        {
            0 => "",
            1 => $$"""{"DatabaseName":"{{FuzzServer.Database}}","Operation":"Subscription","OperationVersion":53000}""",
            _ => $$"""{"DatabaseName":"{{FuzzServer.Database}}","Operation":"{{ReplicationProtocol.Operation}}","OperationVersion":{{ReplicationProtocol.Version}}}""",
        };
        byte[] bytes = [.. Encoding.UTF8.GetBytes(prefix), .. input[1..]];
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        using var deadline = new CancellationTokenSource(Limit);
        try
        {
            socket.ConnectAsync(IPAddress.Loopback, _port, deadline.Token).AsTask().GetAwaiter().GetResult();
            socket.SendAsync(bytes, SocketFlags.None, deadline.Token).AsTask().GetAwaiter().GetResult();
            socket.Shutdown(SocketShutdown.Send);
            var buffer = new byte[64 * 1024];
            while (socket.ReceiveAsync(buffer, SocketFlags.None, deadline.Token).AsTask().GetAwaiter().GetResult() > 0)
            {
            }
        }
        catch (OperationCanceledException)
        {
            throw new FuzzFindingException($"the server kept the connection open {Limit.TotalSeconds} s after its peer closed");
        }
        catch (SocketException)
        {
            // the server reset the connection: a refusal
        }
        _server.ThrowOnLoggedErrors();
    }

    public void Dispose() => _server.Dispose();
}
