using System.IO.Pipelines;

namespace RavenLite.Server.BulkInsert;

/// <summary>
/// Reads and discards the rest of a streamed JSON array body after the server has decided to refuse
/// it, so that the error goes out after the request was read: a client still sending (the official
/// Node client streams a bulk insert and only then waits for the answer) would otherwise see its
/// connection closed mid-body (<c>EPIPE</c>) instead of the JSON error. The Node client never ends a
/// bulk-insert body, so the array's closing <c>]</c> counts as the end: a small scanner follows
/// strings, escapes and nesting from a point of known depth. A body that is not an array is read to
/// its end. Bounded by a time limit and the client going away. Not thread-safe.
/// </summary>
public sealed class BodyDrainer
{
    private readonly JsonNestingScanner _scanner;
    private bool _started, _toEnd;

    private BodyDrainer(bool insideArray)
    {
        _started = insideArray;
        _scanner = new JsonNestingScanner(insideArray ? 1 : 0);
    }

    /// <summary>True once the top-level array's closing bracket was read.</summary>
    public bool Done { get; private set; }

    /// <summary>Bytes discarded so far.</summary>
    public long Discarded { get; private set; }

    /// <summary>A drainer for a body of which nothing was read yet.</summary>
    public static BodyDrainer FromStart() => new(insideArray: false);

    /// <summary>A drainer that starts inside the top-level array, outside any item (between items, or at an item's first byte).</summary>
    public static BodyDrainer InsideArray() => new(insideArray: true);

    /// <summary>Scans <paramref name="data"/>; returns how many of its bytes belong to the body up to and including the closing bracket (all of them when it is not there).</summary>
    public int Feed(ReadOnlySpan<byte> data)
    {
        if (Done)
            return 0;
        int i = 0;
        while (!_started && i < data.Length)
        {
            byte c = data[i++];
            if (c is (byte)' ' or (byte)'\t' or (byte)'\r' or (byte)'\n')
                continue;
            _started = true;
            if (c == (byte)'[')
                _scanner.Reset(1);
            else
                _toEnd = true;
        }
        if (_toEnd || i == data.Length)
        {
            Discarded += data.Length;
            return data.Length;
        }
        int close = _scanner.FindClose(data[i..]);
        int used = close < 0 ? data.Length : i + close + 1;
        Done = close >= 0;
        Discarded += used;
        return used;
    }

    /// <summary>Scans every segment of <paramref name="buffer"/> until <see cref="Done"/>.</summary>
    public void Feed(ReadOnlySequence<byte> buffer)
    {
        foreach (var segment in buffer)
        {
            Feed(segment.Span);
            if (Done)
                return;
        }
    }

    /// <summary>
    /// Reads <paramref name="reader"/> (no read pending) until <see cref="Done"/>, the end of the body,
    /// <paramref name="limit"/> or <paramref name="aborted"/>; never throws for a failed read (the answer
    /// that follows is best effort). Returns true when the body was read to its end or closing bracket.
    /// </summary>
    public async Task<bool> DrainAsync(PipeReader reader, TimeSpan limit, CancellationToken aborted)
    {
        using var cts = CancellationTokenSource.CreateLinkedTokenSource(aborted);
        cts.CancelAfter(limit);
        try
        {
            while (!Done)
            {
                var result = await reader.ReadAsync(cts.Token).ConfigureAwait(false);
                Feed(result.Buffer);
                reader.AdvanceTo(result.Buffer.End);
                if (result.IsCompleted)
                    return true;
            }
            return true;
        }
        catch (Exception e) when (e is OperationCanceledException or IOException or BadHttpRequestException or InvalidDataException or InvalidOperationException)
        {
            return false;
        }
    }
}
