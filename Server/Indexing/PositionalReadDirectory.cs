using Lucene.Net.Store;
using Microsoft.Win32.SafeHandles;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Lucene.Net's <see cref="NIOFSDirectory"/> (writes, locks and file handling unchanged; no memory mapping, see
/// docs/format/indexes.md) whose inputs read with positional reads on the file handle (<see cref="RandomAccess.Read(SafeFileHandle, Span{byte}, long)"/>,
/// one <c>pread</c> per buffer refill). NIOFSDirectory's own inputs read through a <see cref="FileStream"/>: a
/// lock per file around "set position, read" (queries on different threads wait for each other), the stream's
/// own 4 KiB buffer under Lucene's, and a length check (<c>fstat</c>) per read. Clones and slices share the
/// handle (positional reads need no shared position); only the input that opened it closes it. Thread-safe
/// as Lucene's inputs are: one input per thread, clones for others.
/// </summary>
internal sealed class PositionalReadDirectory(DirectoryInfo path) : NIOFSDirectory(path)
{
    /// <inheritdoc/>
    public override IndexInput OpenInput(string name, IOContext context)
    {
        EnsureOpen();
        string file = Path.Combine(Directory.FullName, name);
        var handle = File.OpenHandle(file, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        try
        {
            return new PositionalReadInput($"PositionalReadInput(path=\"{file}\")", handle, 0, RandomAccess.GetLength(handle), BufferedIndexInput.GetBufferSize(context), ownsHandle: true);
        }
        catch
        {
            handle.Dispose();
            throw;
        }
    }

    /// <inheritdoc/>
    public override IndexInputSlicer CreateSlicer(string name, IOContext context)
    {
        EnsureOpen();
        string file = Path.Combine(Directory.FullName, name);
        return new Slicer(file, File.OpenHandle(file, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete), BufferedIndexInput.GetBufferSize(context));
    }

    /// <summary>Slices of one file (compound files), each an input over [offset, offset + length) of the shared handle.</summary>
    private sealed class Slicer(string file, SafeFileHandle handle, int bufferSize) : IndexInputSlicer
    {
        private int _disposed;

        public override IndexInput OpenSlice(string sliceDescription, long offset, long length) =>
            new PositionalReadInput($"PositionalReadInput({sliceDescription} in path=\"{file}\" slice={offset}:{offset + length})", handle, offset, length, bufferSize, ownsHandle: false);

        [Obsolete("Only for reading CFS files from 3.x indexes.")]
        public override IndexInput OpenFullSlice() => OpenSlice("full-slice", 0, RandomAccess.GetLength(handle));

        protected override void Dispose(bool disposing)
        {
            if (Interlocked.Exchange(ref _disposed, 1) == 0 && disposing)
                handle.Dispose();
        }
    }

    /// <summary>A buffered input over [start, start + length) of a file handle, refilled with positional reads.</summary>
    private sealed class PositionalReadInput(string description, SafeFileHandle handle, long start, long length, int bufferSize, bool ownsHandle)
        : BufferedIndexInput(description, bufferSize)
    {
        private bool _owner = ownsHandle;
        private int _disposed;

        public override long Length => length;

        protected override void ReadInternal(byte[] b, int offset, int len)
        {
            long position = Position; // where this refill starts, relative to the slice
            if (position + len > length)
                throw new EndOfStreamException($"read past EOF: {this} (position {position}, length {len}, end {length})");
            int done = 0;
            while (done < len)
            {
                int n = RandomAccess.Read(handle, b.AsSpan(offset + done, len - done), start + position + done);
                if (n <= 0)
                    throw new EndOfStreamException($"read past EOF: {this} (the file ended at {start + position + done})");
                done += n;
            }
        }

        protected override void SeekInternal(long pos)
        {
            // Positional reads: the next refill reads at Position.
        }

        public override object Clone()
        {
            var clone = (PositionalReadInput)base.Clone();
            clone._owner = false;
            clone._disposed = 0;
            return clone;
        }

        protected override void Dispose(bool disposing)
        {
            if (Interlocked.Exchange(ref _disposed, 1) == 0 && disposing && _owner)
                handle.Dispose();
        }
    }
}
