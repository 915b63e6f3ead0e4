namespace RavenLite.Server.Etl;

/// <summary>
/// Text written into chunks from a pool of its own and handed back when disposed: a batch's COPY rows wait in it
/// for their load without becoming objects the collector promotes and later sweeps.
/// </summary>
internal sealed class PooledText : TextWriter
{
    private const int ChunkChars = 1 << 15; // below the large-object threshold
    private static readonly ArrayPool<char> Chunks = ArrayPool<char>.Create(ChunkChars, 1024);
    private readonly List<char[]> _full = [];
    private char[]? _current;
    private int _used;

    public override Encoding Encoding => Encoding.Unicode;

    public override void Write(char value)
    {
        if (_current == null || _used == _current.Length)
            Next();
        _current![_used++] = value;
    }

    public override void Write(string? value) => Write(value.AsSpan());

    public override void Write(char[] buffer, int index, int count) => Write(buffer.AsSpan(index, count));

    public override void Write(ReadOnlySpan<char> buffer)
    {
        while (buffer.Length > 0)
        {
            if (_current == null || _used == _current.Length)
                Next();
            int n = Math.Min(buffer.Length, _current!.Length - _used);
            buffer[..n].CopyTo(_current.AsSpan(_used));
            _used += n;
            buffer = buffer[n..];
        }
    }

    /// <summary>Writes everything written so far to <paramref name="w"/>.</summary>
    public void CopyTo(TextWriter w)
    {
        ArgumentNullException.ThrowIfNull(w);
        foreach (var chunk in _full)
            w.Write(chunk, 0, chunk.Length); // a chunk is passed on full
        if (_current != null)
            w.Write(_current, 0, _used);
    }

    private void Next()
    {
        if (_current != null)
            _full.Add(_current);
        _current = Chunks.Rent(ChunkChars);
        _used = 0;
    }

    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            foreach (var chunk in _full)
                Chunks.Return(chunk);
            _full.Clear();
            if (_current != null)
                Chunks.Return(_current);
            _current = null;
        }
        base.Dispose(disposing);
    }
}
