using System.Buffers.Binary;
using Lucene.Net.Store;
using RavenLite.Storage.Encryption;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The Lucene files of an encrypted database (docs/format/indexes.md "Encrypted indexes"): every file is a run of
/// blocks of <see cref="BlockSize"/> bytes of its content (the last one shorter), each sealed on its own with the
/// database's key and bound to the file's name, its number and whether it is the last — so a block moved to another
/// file or place, a file cut short, or a changed byte is refused as corruption — and followed by its nonce and tag.
/// Lucene writes a file once, front to back, and reads it at any position: a read opens the block it falls in (the
/// last one read stays opened, per input). Everything else (listing, deleting, syncing, locks) is the wrapped
/// directory's.
/// </summary>
internal sealed class EncryptedDirectory(Lucene.Net.Store.Directory inner, EncryptionKey key) : FilterDirectory(inner)
{
    /// <summary>Content bytes per block.</summary>
    public const int BlockSize = 4096;

    private const int StoredBlock = BlockSize + EncryptionKey.SealSize;

    /// <summary>A file's content length from its length on disk.</summary>
    private static long ContentLength(long stored)
    {
        long full = stored / StoredBlock, rest = stored % StoredBlock;
        if (rest == 0)
            return full * BlockSize;
        return rest >= EncryptionKey.SealSize ? (full * BlockSize) + rest - EncryptionKey.SealSize
            : throw new Lucene.Net.Index.CorruptIndexException($"an encrypted index file of {stored} bytes ends inside a block's seal");
    }


    public override long FileLength(string name) => ContentLength(base.FileLength(name));

    public override IndexOutput CreateOutput(string name, IOContext context) => new SealingOutput(name, base.CreateOutput(name, context), key);

    public override IndexInput OpenInput(string name, IOContext context)
    {
        var stored = base.OpenInput(name, context);
        try
        {
            return new OpeningInput(name, stored, ContentLength(stored.Length), key);
        }
        catch
        {
            stored.Dispose();
            throw;
        }
    }

    public override IndexInputSlicer CreateSlicer(string name, IOContext context) => new Slicer(OpenInput(name, context));

    /// <summary>Writes content in sealed blocks; the last (possibly short, possibly empty) block is sealed on dispose.</summary>
    private sealed class SealingOutput(string name, IndexOutput stored, EncryptionKey key) : IndexOutput
    {
        private readonly byte[] _block = new byte[BlockSize];
        private readonly byte[] _sealed = new byte[StoredBlock];
        private readonly System.IO.Hashing.Crc32 _crc = new();
        private int _used;
        private long _blocks, _position;
        private bool _disposed;

        public override long Position => _position;

        public override long Length => _position;

        public override long Checksum => _crc.GetCurrentHashAsUInt32();

        public override void WriteByte(byte b)
        {
            if (_used == BlockSize)
                Seal(last: false);
            _block[_used++] = b;
            _crc.Append([b]);
            _position++;
        }

        public override void WriteBytes(byte[] b, int offset, int length)
        {
            _crc.Append(b.AsSpan(offset, length));
            _position += length;
            while (length > 0)
            {
                if (_used == BlockSize)
                    Seal(last: false);
                int n = Math.Min(length, BlockSize - _used);
                Buffer.BlockCopy(b, offset, _block, _used, n);
                _used += n;
                offset += n;
                length -= n;
            }
        }

        /// <summary>Seals the block held and writes it (a full one is sealed only once more follows, so the last is known).</summary>
        private void Seal(bool last)
        {
            var content = _block.AsSpan(0, _used);
            key.Seal(content, _sealed.AsSpan(0, _used), _sealed.AsSpan(_used, EncryptionKey.SealSize), EncryptionKey.Binding(name, _blocks, last));
            stored.WriteBytes(_sealed, 0, _used + EncryptionKey.SealSize);
            _blocks++;
            _used = 0;
        }

        public override void Flush() => stored.Flush(); // the block being filled is written when it is sealed

        [Obsolete("Lucene writes files front to back.")]
        public override void Seek(long pos) => throw new NotSupportedException("An encrypted index file is written front to back.");

        protected override void Dispose(bool disposing)
        {
            if (_disposed || !disposing)
                return;
            _disposed = true;
            try
            {
                Seal(last: true);
            }
            finally
            {
                stored.Dispose();
            }
        }
    }

    /// <summary>Reads content at any position, opening the block it falls in.</summary>
    private sealed class OpeningInput : BufferedIndexInput
    {
        private readonly string _name;
        private IndexInput _stored;
        private readonly long _length;
        private readonly EncryptionKey _key;
        private byte[] _block = new byte[BlockSize];
        private byte[] _sealed = new byte[StoredBlock];
        private long _opened = -1;
        private int _openedLength;
        private bool _clone;

        public OpeningInput(string name, IndexInput stored, long length, EncryptionKey key) : base($"EncryptedInput({name})", BlockSize)
        {
            _name = name;
            _stored = stored;
            _length = length;
            _key = key;
        }

        public override long Length => _length;

        protected override void ReadInternal(byte[] b, int offset, int len)
        {
            long position = Position;
            if (position + len > _length)
                throw new EndOfStreamException($"read past EOF: {this} (position {position}, length {len}, end {_length})");
            while (len > 0)
            {
                long block = position / BlockSize;
                Open(block);
                int at = (int)(position % BlockSize);
                int n = Math.Min(len, _openedLength - at);
                Buffer.BlockCopy(_block, at, b, offset, n);
                position += n;
                offset += n;
                len -= n;
            }
        }

        private void Open(long block)
        {
            if (block == _opened)
                return;
            long blocks = _length == 0 ? 1 : ((_length - 1) / BlockSize) + 1;
            bool last = block == blocks - 1;
            int contentLength = last ? (int)(_length - (block * BlockSize)) : BlockSize;
            _stored.Seek(block * StoredBlock);
            _stored.ReadBytes(_sealed, 0, contentLength + EncryptionKey.SealSize);
            if (!_key.Open(_sealed.AsSpan(0, contentLength), _sealed.AsSpan(contentLength, EncryptionKey.SealSize), _block.AsSpan(0, contentLength), EncryptionKey.Binding(_name, block, last)))
            {
                _opened = -1;
                throw new Lucene.Net.Index.CorruptIndexException($"block {block} of encrypted index file '{_name}' does not authenticate (changed, moved or cut short)");
            }
            _opened = block;
            _openedLength = contentLength;
        }

        protected override void SeekInternal(long pos)
        {
            // The next refill reads at Position.
        }

        public override object Clone()
        {
            var clone = (OpeningInput)base.Clone();
            clone._stored = (IndexInput)_stored.Clone();
            clone._block = new byte[BlockSize];
            clone._sealed = new byte[StoredBlock];
            clone._opened = -1;
            clone._clone = true;
            return clone;
        }

        protected override void Dispose(bool disposing)
        {
            if (disposing && !_clone)
                _stored.Dispose();
        }
    }

    /// <summary>Slices of one file's content (compound files), each over a clone of the file's input.</summary>
    private sealed class Slicer(IndexInput whole) : IndexInputSlicer
    {
        public override IndexInput OpenSlice(string sliceDescription, long offset, long length) =>
            new SliceInput($"EncryptedSlice({sliceDescription} in {whole})", (IndexInput)whole.Clone(), offset, length);

        [Obsolete("Only for reading CFS files from 3.x indexes.")]
        public override IndexInput OpenFullSlice() => OpenSlice("full-slice", 0, whole.Length);

        protected override void Dispose(bool disposing)
        {
            if (disposing)
                whole.Dispose();
        }
    }

    /// <summary>[offset, offset + length) of a file's content.</summary>
    private sealed class SliceInput(string description, IndexInput content, long start, long length) : BufferedIndexInput(description, BlockSize)
    {
        private IndexInput _content = content;

        public override long Length => length;

        protected override void ReadInternal(byte[] b, int offset, int len)
        {
            long position = Position;
            if (position + len > length)
                throw new EndOfStreamException($"read past EOF: {this} (position {position}, length {len}, end {length})");
            _content.Seek(start + position);
            _content.ReadBytes(b, offset, len);
        }

        protected override void SeekInternal(long pos)
        {
            // The next refill seeks.
        }

        public override object Clone()
        {
            var clone = (SliceInput)base.Clone();
            clone._content = (IndexInput)_content.Clone();
            return clone;
        }

        protected override void Dispose(bool disposing)
        {
            // The content's input is a clone of the slicer's file input, closed with it.
        }
    }
}
