namespace RavenLite.Server.Replication;

/// <summary>
/// The messages of a replication connection after its header (docs/replication.md): each a frame of a 4-byte
/// little-endian length and that many bytes of UTF-8 JSON. Frames, not RavenDB's back-to-back JSON, because a batch
/// runs to megabytes: its end is known without scanning it.
/// </summary>
internal static class ReplicationFrames
{
    /// <summary>The largest frame either side accepts: a batch holds at least one whole transaction, and a transaction of the merger is bounded well below this.</summary>
    public const int MaxFrameBytes = 512 << 20;

    public static async Task WriteAsync(Stream stream, ReadOnlyMemory<byte> json, CancellationToken cancellation)
    {
        var length = new byte[4];
        BinaryPrimitives.WriteInt32LittleEndian(length, json.Length);
        await stream.WriteAsync(length, cancellation).ConfigureAwait(false);
        await stream.WriteAsync(json, cancellation).ConfigureAwait(false);
        await stream.FlushAsync(cancellation).ConfigureAwait(false);
    }

    public static Task WriteAsync(Stream stream, Action<Utf8JsonWriter> write, CancellationToken cancellation)
    {
        var buffer = new ArrayBufferWriter<byte>(256);
        using (var w = new Utf8JsonWriter(buffer))
            write(w);
        return WriteAsync(stream, buffer.WrittenMemory, cancellation);
    }

    /// <summary>The next frame's JSON, or null when the stream ended cleanly between frames.</summary>
    public static async Task<JsonDocument?> ReadAsync(Stream stream, CancellationToken cancellation)
    {
        var length = new byte[4];
        int read = await stream.ReadAtLeastAsync(length, 4, throwOnEndOfStream: false, cancellation).ConfigureAwait(false);
        if (read == 0)
            return null;
        if (read < 4)
            throw new EndOfStreamException("The replication connection ended inside a frame header.");
        int size = BinaryPrimitives.ReadInt32LittleEndian(length);
        if (size is <= 0 or > MaxFrameBytes)
            throw new InvalidDataException($"A replication frame of {size} bytes is out of range (1..{MaxFrameBytes}).");
        var body = new byte[size];
        await stream.ReadExactlyAsync(body, cancellation).ConfigureAwait(false);
        return JsonDocument.Parse(body);
    }

    /// <summary>The frame's <c>Type</c>.</summary>
    public static string TypeOf(JsonDocument frame) =>
        frame.RootElement.TryGetProperty("Type", out var t) && t.ValueKind == JsonValueKind.String ? t.GetString()! : "";
}
