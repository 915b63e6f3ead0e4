using System.Collections.Concurrent;
using RavenLite.Storage.Transactions;
using ZstdSharp;

namespace RavenLite.Server.Documents;

/// <summary>
/// Compression of stored documents: Zstandard with a dictionary per collection, trained from the collection's own
/// documents (docs/format/documents.md "Compression"). A collection's documents are stored as JSON until it has a
/// dictionary; the first documents written are kept as samples, a dictionary is trained from them off the write path,
/// and the write transaction after training stores it and compresses with it from then on. When the documents written
/// under a dictionary compress clearly worse than its samples did, a new one is trained from recent documents; the old
/// ones stay (records name the dictionary they were written with).
/// Invariants:
/// 1. A dictionary id names one dictionary for the life of this object: new ids go past the largest in the tree and
///    past every id this object handed out, so a dictionary whose transaction rolled back leaves a gap, never a second
///    meaning for its id.
/// 2. A record names a dictionary stored in the same transaction or an earlier one (the transaction that first
///    compresses with a dictionary stores it).
/// 3. A collection's current dictionary changes only when the transaction that stored it completes
///    (<see cref="Writer.Complete"/>); until then only that transaction uses it.
/// </summary>
internal sealed class DocumentCompression
{
    public const string TreeName = "CompressionDictionaries";

    /// <summary>First byte of a compressed JSON body (stored JSON starts with <c>{</c>).</summary>
    public const byte Marker = 0x01;

    /// <summary>Marker, then the dictionary id (uint32).</summary>
    public const int PrefixSize = 5;

    /// <summary>
    /// Zstandard level 1 (the "fast" strategy): with the collection's dictionary it compresses about as well as level 3
    /// and costs the merger thread less CPU per document (the figures are in docs/benchmarks.md, bulk-insert).
    /// </summary>
    private const int Level = 1;
    private const int DictionaryCapacity = 32 * 1024;
    private const int SampleCount = 1000;
    private const long SampleBytes = 4 << 20;
    private const int MinSamples = 100;
    private const int MaxSampleLength = 16 * 1024;
    private const int MinJsonLength = 32;
    private const int RetrainWindow = 4096;

    private readonly ConcurrentDictionary<uint, Dictionary> _byId = new();
    private readonly Dictionary<string, CollectionState> _collections = new(StringComparer.Ordinal); // lower-cased; under the lock
    private readonly object _lock = new();
    private uint _lastId;
    private long _heldSampleBytes; // samples kept by all collections (under the lock)

    /// <summary>Bytes of samples the database's collections may hold together (64 MiB; tests lower it).</summary>
    internal long SampleBudget { get; set; } = 64 << 20;

    /// <summary>Bytes of samples held now.</summary>
    internal long HeldSampleBytes
    {
        get
        {
            lock (_lock)
                return _heldSampleBytes;
        }
    }

    /// <summary>Loads the dictionaries stored in <paramref name="tx"/> (creating the tree).</summary>
    public DocumentCompression(WriteTransaction tx)
    {
        var tree = tx.CreateTree(TreeName);
        var c = tree.CreateCursor();
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
        {
            uint id = BinaryPrimitives.ReadUInt32BigEndian(c.Key);
            var v = c.Value;
            int colLen = BinaryPrimitives.ReadUInt16LittleEndian(v);
            string collection = Encoding.UTF8.GetString(v.Slice(2, colLen));
            double ratio = BinaryPrimitives.ReadDoubleLittleEndian(v[(2 + colLen)..]);
            var d = new Dictionary(id, collection, v[(10 + colLen)..].ToArray(), ratio);
            _byId[id] = d;
            State(collection).Current = d; // ids ascend: the last one of a collection is its current
            _lastId = Math.Max(_lastId, id);
        }
    }

    /// <summary>Dictionaries known (for stats): the stored ones, plus any of a transaction in flight or rolled back.</summary>
    public int DictionaryCount => _byId.Count;

    private long _compressedWrites, _bytesIn, _bytesOut;

    /// <summary>Documents written compressed since the database opened.</summary>
    public long CompressedWrites => Interlocked.Read(ref _compressedWrites);

    /// <summary>Their JSON bytes and their compressed bytes (with the 5-byte prefix), since the database opened.</summary>
    public (long Json, long Stored) CompressedBytes => (Interlocked.Read(ref _bytesIn), Interlocked.Read(ref _bytesOut));

    /// <summary>True when <paramref name="body"/> (a record's JSON part) is compressed.</summary>
    public static bool IsCompressed(ReadOnlySpan<byte> body) => body.Length > 0 && body[0] == Marker;

    /// <summary>The JSON of a record's body, as a new array.</summary>
    public byte[] Decode(ReadOnlySpan<byte> body)
    {
        if (!IsCompressed(body))
            return body.ToArray();
        byte[]? buffer = null;
        var json = Decode(body, ref buffer);
        return json.Length == buffer!.Length ? buffer : json.ToArray();
    }

    /// <summary>The JSON of a record's body: <paramref name="body"/> itself when stored as JSON, else decompressed into <paramref name="buffer"/> (grown as needed).</summary>
    public ReadOnlySpan<byte> Decode(ReadOnlySpan<byte> body, ref byte[]? buffer)
    {
        if (!IsCompressed(body))
            return body;
        if (body.Length < PrefixSize)
            throw new InvalidDataException("A compressed document record is cut short.");
        uint id = BinaryPrimitives.ReadUInt32LittleEndian(body[1..]);
        if (!_byId.TryGetValue(id, out var dictionary))
            throw new InvalidDataException($"A document record names compression dictionary {id}, which this database does not have.");
        var frame = body[PrefixSize..];
        ulong size = Decompressor.GetDecompressedSize(frame);
        if (size > int.MaxValue)
            throw new InvalidDataException("A compressed document record names an impossible size.");
        if (buffer == null || buffer.Length < (int)size)
            buffer = new byte[(int)size];
        var decompressor = dictionary.RentDecompressor();
        try
        {
            int n = decompressor.Unwrap(frame, buffer);
            return buffer.AsSpan(0, n);
        }
        finally
        {
            dictionary.ReturnDecompressor(decompressor);
        }
    }

    /// <summary>The training under way for a collection, if any (tests wait on it).</summary>
    internal Task? TrainingOf(string collection)
    {
        lock (_lock)
            return _collections.TryGetValue(collection.ToLowerInvariant(), out var state) ? state.Training : null;
    }

    private CollectionState State(string lowerCollection)
    {
        if (!_collections.TryGetValue(lowerCollection, out var state))
            _collections[lowerCollection] = state = new CollectionState(lowerCollection);
        return state;
    }

    /// <summary>The compression side of one write transaction (the writer's thread only).</summary>
    public Writer BeginWrite(WriteTransaction tx) => new(this, tx);

    internal sealed class Writer(DocumentCompression owner, WriteTransaction tx)
    {
        private Dictionary<CollectionState, Dictionary>? _stored; // dictionaries this transaction stored, by collection

        /// <summary>
        /// The record to store for <paramref name="record"/> (a <see cref="DocumentRecord"/> with its JSON) of
        /// <paramref name="collection"/>: compressed into <paramref name="output"/> when that is smaller, else
        /// <paramref name="record"/> itself.
        /// </summary>
        public ReadOnlySpan<byte> Encode(ReadOnlySpan<byte> record, string collection, ArrayBufferWriter<byte> output)
        {
            int headerLength = DocumentRecord.BodyOffset(record);
            var json = record[headerLength..];
            if (json.Length < MinJsonLength)
                return record;
            Dictionary? dictionary;
            CollectionState state;
            lock (owner._lock)
            {
                state = owner.State(collection.ToLowerInvariant());
                dictionary = _stored != null && _stored.TryGetValue(state, out var mine) ? mine : state.Current;
                if (state.Training is { IsCompleted: true } training)
                {
                    state.Training = null;
                    if (training.IsCompletedSuccessfully && training.Result is { } trained)
                        dictionary = Store(state, trained.Dictionary, trained.Ratio);
                    else
                        state.SampleTarget *= 2; // training failed (too little or too uniform data): wait for more
                }
                if ((dictionary == null || state.Resample) && state.Training == null)
                    owner._heldSampleBytes += state.AddSample(json, owner._heldSampleBytes < owner.SampleBudget);
            }
            if (dictionary == null)
                return record;
            var compressor = dictionary.Compressor;
            output.ResetWrittenCount();
            var span = output.GetSpan(headerLength + PrefixSize + Compressor.GetCompressBound(json.Length));
            int n = compressor.Wrap(json, span[(headerLength + PrefixSize)..]);
            lock (owner._lock)
                state.Observe(json.Length, n + PrefixSize, dictionary);
            if (n + PrefixSize >= json.Length)
                return record;
            Interlocked.Increment(ref owner._compressedWrites);
            Interlocked.Add(ref owner._bytesIn, json.Length);
            Interlocked.Add(ref owner._bytesOut, n + PrefixSize);
            record[..headerLength].CopyTo(span);
            span[headerLength] = Marker;
            BinaryPrimitives.WriteUInt32LittleEndian(span[(headerLength + 1)..], dictionary.Id);
            return span[..(headerLength + PrefixSize + n)];
        }

        private Dictionary Store(CollectionState state, byte[] bytes, double ratio)
        {
            uint id = ++owner._lastId;
            var d = new Dictionary(id, state.Collection, bytes, ratio);
            int colLen = Encoding.UTF8.GetByteCount(state.Collection);
            var value = new byte[10 + colLen + bytes.Length];
            BinaryPrimitives.WriteUInt16LittleEndian(value, (ushort)colLen);
            Encoding.UTF8.GetBytes(state.Collection, value.AsSpan(2));
            BinaryPrimitives.WriteDoubleLittleEndian(value.AsSpan(2 + colLen), ratio);
            bytes.CopyTo(value.AsSpan(10 + colLen));
            Span<byte> key = stackalloc byte[4];
            BinaryPrimitives.WriteUInt32BigEndian(key, id);
            tx.CreateTree(TreeName).Put(key, value);
            owner._byId[id] = d;
            (_stored ??= [])[state] = d;
            return d;
        }

        /// <summary>Makes the dictionaries this transaction stored current; call when the transaction is about to commit.</summary>
        public void Complete()
        {
            if (_stored == null)
                return;
            lock (owner._lock)
                foreach (var (state, d) in _stored)
                {
                    state.Current = d;
                    state.Resample = false;
                }
            _stored = null;
        }
    }

    private sealed class CollectionState(string collection)
    {
        public readonly string Collection = collection;
        public Dictionary? Current;
        public bool Resample;
        public int SampleTarget = SampleCount;
        public Task<(byte[] Dictionary, double Ratio)?>? Training;
        private List<byte[]> _samples = [];
        private long _sampleBytes;
        private long _windowRaw, _windowCompressed;
        private int _windowDocs;

        /// <summary>
        /// Keeps <paramref name="json"/> as a sample when <paramref name="room"/> (the database's samples are bounded),
        /// and starts training once there are enough; returns the change in bytes held.
        /// </summary>
        public long AddSample(ReadOnlySpan<byte> json, bool room)
        {
            if (!room)
                return 0; // many small collections hold samples they may never use: the rest wait until one trains
            var sample = json[..Math.Min(json.Length, MaxSampleLength)].ToArray();
            _samples.Add(sample);
            _sampleBytes += sample.Length;
            if (_samples.Count < SampleTarget && !(_sampleBytes >= SampleBytes && _samples.Count >= MinSamples))
                return sample.Length;
            var samples = _samples;
            long released = _sampleBytes - sample.Length;
            _samples = [];
            _sampleBytes = 0;
            Training = Task.Run(() => Train(samples));
            return -released;
        }

        /// <summary>Counts a compressed document; after a window of them, asks for a new dictionary when they compress clearly worse than the samples did.</summary>
        public void Observe(int raw, int compressed, Dictionary d)
        {
            _windowRaw += raw;
            _windowCompressed += Math.Min(raw, compressed);
            if (++_windowDocs < RetrainWindow)
                return;
            double ratio = _windowCompressed / (double)_windowRaw;
            if (ratio > d.TrainedRatio * 1.25 + 0.02 && !Resample && Training == null)
                Resample = true;
            _windowDocs = 0;
            _windowRaw = _windowCompressed = 0;
        }
    }

    private static (byte[] Dictionary, double Ratio)? Train(List<byte[]> samples)
    {
        try
        {
            long total = samples.Sum(s => (long)s.Length);
            byte[] dictionary = DictBuilder.TrainFromBuffer(samples, (int)Math.Min(DictionaryCapacity, Math.Max(1024, total / 10)));
            using var compressor = NewCompressor(dictionary);
            var output = new byte[Compressor.GetCompressBound(MaxSampleLength)];
            long compressed = 0;
            foreach (var s in samples)
                compressed += compressor.Wrap(s, output) + PrefixSize;
            return (dictionary, compressed / (double)total);
        }
        catch (ZstdException)
        {
            return null;
        }
    }

    private static Compressor NewCompressor(byte[] dictionary)
    {
        var c = new Compressor(Level);
        c.SetParameter(ZstdSharp.Unsafe.ZSTD_cParameter.ZSTD_c_checksumFlag, 0); // pages carry checksums
        c.SetParameter(ZstdSharp.Unsafe.ZSTD_cParameter.ZSTD_c_dictIDFlag, 0); // the record names the dictionary
        c.LoadDictionary(dictionary);
        return c;
    }

    /// <summary>A stored dictionary with its codecs (their native state is freed by their safe handles when unreachable).</summary>
    private sealed class Dictionary(uint id, string collection, byte[] bytes, double trainedRatio)
    {
        public readonly uint Id = id;
        public readonly string Collection = collection;
        public readonly double TrainedRatio = trainedRatio;
        private Compressor? _compressor;
        private readonly ConcurrentBag<Decompressor> _decompressors = [];

        /// <summary>The writer's compressor (one writer at a time).</summary>
        public Compressor Compressor => _compressor ??= NewCompressor(bytes);

        public Decompressor RentDecompressor()
        {
            if (_decompressors.TryTake(out var d))
                return d;
            d = new Decompressor();
            d.LoadDictionary(bytes);
            return d;
        }

        public void ReturnDecompressor(Decompressor d) => _decompressors.Add(d);
    }
}
