using System.Net.Sockets;

namespace RavenLite.Server.Tests.Helpers;

/// <summary>
/// A hand-written HTTP/1.1 exchange over a socket, for what HttpClient will not do: send a chunked
/// body and never send its terminating chunk (the Node client's bulk insert, docs/protocol.md §7), stall,
/// or hang up in the middle of a document.
/// </summary>
public sealed class RawHttp : IDisposable
{
    private readonly TcpClient _client = new();
    private NetworkStream _stream = null!;
    private readonly List<byte> _buffer = []; // read but not yet consumed (pipelined answers)

    /// <summary>Connects to the server.</summary>
    public static async Task<RawHttp> ConnectAsync(Uri server)
    {
        var raw = new RawHttp();
        await raw._client.ConnectAsync(server.Host, server.Port);
        raw._stream = raw._client.GetStream();
        return raw;
    }

    /// <summary>Sends the request line and headers of a chunked POST.</summary>
    public Task StartChunkedPostAsync(string pathAndQuery, string? extraHeaders = null) =>
        WriteAsync(Encoding.ASCII.GetBytes($"POST {pathAndQuery} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n{extraHeaders}\r\n"));

    /// <summary>Sends one chunk.</summary>
    public async Task ChunkAsync(ReadOnlyMemory<byte> data)
    {
        if (data.Length == 0)
            return;
        await WriteAsync(Encoding.ASCII.GetBytes($"{data.Length:x}\r\n"));
        await WriteAsync(data);
        await WriteAsync("\r\n"u8.ToArray());
    }

    /// <summary>Sends text as one chunk.</summary>
    public Task ChunkAsync(string text) => ChunkAsync(Encoding.UTF8.GetBytes(text));

    /// <summary>Sends the zero-length terminating chunk.</summary>
    public Task EndAsync() => WriteAsync("0\r\n\r\n"u8.ToArray());

    /// <summary>Sends text as it is (whole requests, several of them pipelined).</summary>
    public Task SendAsync(string raw) => WriteAsync(Encoding.UTF8.GetBytes(raw));

    private async Task WriteAsync(ReadOnlyMemory<byte> bytes)
    {
        await _stream.WriteAsync(bytes);
        await _stream.FlushAsync();
    }

    /// <summary>Reads one response: status, headers (lower-cased names) and a Content-Length body. Times out after <paramref name="timeout"/>.</summary>
    public async Task<(int Status, Dictionary<string, string> Headers, string Body)> ReadResponseAsync(TimeSpan timeout)
    {
        using var cts = new CancellationTokenSource(timeout);
        var buffer = _buffer;
        var one = new byte[4096];
        int headerEnd;
        while ((headerEnd = IndexOf(buffer, "\r\n\r\n"u8)) < 0)
        {
            int n = await _stream.ReadAsync(one, cts.Token);
            if (n == 0)
                throw new IOException("Connection closed before the response headers.");
            buffer.AddRange(one.AsSpan(0, n));
        }
        string head = Encoding.ASCII.GetString(buffer.GetRange(0, headerEnd).ToArray());
        var lines = head.Split("\r\n");
        int status = int.Parse(lines[0].Split(' ')[1], System.Globalization.CultureInfo.InvariantCulture);
        var headers = lines.Skip(1).Select(l => l.Split(':', 2)).ToDictionary(p => p[0].Trim().ToLowerInvariant(), p => p[1].Trim());
        int length = headers.TryGetValue("content-length", out var cl) ? int.Parse(cl, System.Globalization.CultureInfo.InvariantCulture) : 0;
        buffer.RemoveRange(0, headerEnd + 4);
        while (buffer.Count < length)
        {
            int n = await _stream.ReadAsync(one, cts.Token);
            if (n == 0)
                break;
            buffer.AddRange(one.AsSpan(0, n));
        }
        int taken = Math.Min(length, buffer.Count);
        string text = Encoding.UTF8.GetString(buffer.GetRange(0, taken).ToArray());
        buffer.RemoveRange(0, taken); // the rest belongs to the next answer
        return (status, headers, text);
    }

    private static int IndexOf(List<byte> haystack, ReadOnlySpan<byte> needle)
    {
        for (int i = 0; i + needle.Length <= haystack.Count; i++)
        {
            int j = 0;
            while (j < needle.Length && haystack[i + j] == needle[j])
                j++;
            if (j == needle.Length)
                return i;
        }
        return -1;
    }

    /// <summary>Hangs up abruptly.</summary>
    public void Dispose() => _client.Dispose();
}
