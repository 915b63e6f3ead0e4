using DotNext.IO;
using DotNext.Net.Cluster.Consensus.Raft.StateMachine;

namespace RavenLite.Server.Cluster;

/// <summary>
/// The Raft state machine (DotNext's <see cref="SimpleStateMachine"/>): applies each committed log entry to the
/// <see cref="ClusterState"/>, and snapshots it as JSON so the log before the snapshot can go.
/// </summary>
internal sealed class ClusterStateMachine(DirectoryInfo location) : SimpleStateMachine(location)
{
    private const int SnapshotEvery = 1024;
    private readonly ClusterState _state = new();

    /// <summary>Raised (on the applier's thread) after a command changed the state.</summary>
    public Action? Changed { get; set; }

    /// <summary>The database groups as last applied, without the state's lock (an immutable map, replaced on each change).</summary>
    public System.Collections.Immutable.ImmutableSortedDictionary<string, DatabaseGroup> Groups => _state.Groups;

    /// <summary>Reads the state under its lock (the applier changes it on its own thread).</summary>
    public T Read<T>(Func<ClusterState, T> read)
    {
        lock (_state)
            return read(_state);
    }

    protected override ValueTask<bool> ApplyAsync(LogEntry entry, CancellationToken token)
    {
        // Entries without a JSON command (the engine's own: no-ops of a new term, configuration changes) only move the index.
        if (entry.TryGetPayload(out var payload) && payload.Length > 0 && payload.FirstSpan[0] == (byte)'{')
        {
            using var command = JsonDocument.Parse(payload);
            lock (_state)
                _state.Apply(command.RootElement, entry.Index);
            Changed?.Invoke();
        }
        return new(entry.Index % SnapshotEvery == 0);
    }

    protected override ValueTask PersistAsync(IAsyncBinaryWriter writer, CancellationToken token)
    {
        var buffer = new ArrayBufferWriter<byte>(1024);
        using (var w = new Utf8JsonWriter(buffer))
            lock (_state)
                _state.Write(w);
        return writer.Invoke(buffer.WrittenMemory, token);
    }

    protected override async ValueTask RestoreAsync(FileInfo snapshotFile, CancellationToken token)
    {
        using var snapshot = JsonDocument.Parse(await File.ReadAllBytesAsync(snapshotFile.FullName, token).ConfigureAwait(false));
        lock (_state)
            _state.Read(snapshot.RootElement);
        Changed?.Invoke();
    }
}
