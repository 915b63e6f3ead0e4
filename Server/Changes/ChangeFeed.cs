using System.Threading.Channels;
using RavenLite.Server.Formatting;

namespace RavenLite.Server.Changes;

/// <summary>What a change is about (the changes API's notification types).</summary>
public enum ChangeKind
{
    /// <summary>A document put or deleted (<c>DocumentChange</c>).</summary>
    Document,

    /// <summary>A counter put, incremented or deleted (<c>CounterChange</c>).</summary>
    Counter,

    /// <summary>Time-series entries appended or deleted (<c>TimeSeriesChange</c>).</summary>
    TimeSeries,

    /// <summary>An index added, removed or having indexed a batch (<c>IndexChange</c>).</summary>
    Index,

    /// <summary>A long operation's state (<c>OperationStatusChange</c>).</summary>
    Operation,
}

/// <summary>
/// One change, as the write that made it saw it. <see cref="Id"/> is the document id (counters, time series too),
/// <see cref="Name"/> the counter, series or index name; <see cref="Value"/> a counter's total or an operation id;
/// <see cref="State"/> an operation's state JSON.
/// </summary>
public sealed record ChangeEvent(ChangeKind Kind, string Type, string? Id = null, string? Collection = null, string? Name = null, string? ChangeVector = null,
    long Value = 0, DateTime From = default, DateTime To = default, byte[]? State = null)
{
    private static readonly JsonWriterOptions WriterOptions = new() { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping };

    /// <summary>The notification as the clients read it: <c>{"Type": "DocumentChange", "Value": {...}}</c>.</summary>
#pragma warning disable CA1507 // the names are RavenDB's wire names, equal to some of this record's by coincidence
    public byte[] ToJson()
    {
        var buffer = new ArrayBufferWriter<byte>(256);
        using (var w = new Utf8JsonWriter(buffer, WriterOptions))
        {
            w.WriteStartObject();
            w.WriteString("Type", Kind switch
            {
                ChangeKind.Document => "DocumentChange",
                ChangeKind.Counter => "CounterChange",
                ChangeKind.TimeSeries => "TimeSeriesChange",
                ChangeKind.Index => "IndexChange",
                _ => "OperationStatusChange",
            });
            w.WriteStartObject("Value");
            switch (Kind)
            {
                case ChangeKind.Document:
                    w.WriteString("Type", Type);
                    w.WriteString("Id", Id);
                    w.WriteString("CollectionName", Collection);
                    w.WriteString("ChangeVector", ChangeVector);
                    break;
                case ChangeKind.Counter:
                    w.WriteString("Type", Type);
                    w.WriteString("Name", Name);
                    w.WriteNumber("Value", Value);
                    w.WriteString("DocumentId", Id);
                    w.WriteString("CollectionName", Collection);
                    w.WriteString("ChangeVector", ChangeVector);
                    break;
                case ChangeKind.TimeSeries:
                    w.WriteString("Type", Type);
                    w.WriteString("Name", Name);
                    // A whole series deleted spans all time: open ends are null, as RavenDB writes them.
                    JsonDates.WriteBound(w, "From", From.Ticks / TimeSpan.TicksPerMillisecond);
                    JsonDates.WriteBound(w, "To", To.Ticks / TimeSpan.TicksPerMillisecond);
                    w.WriteString("DocumentId", Id);
                    w.WriteString("CollectionName", Collection);
                    w.WriteString("ChangeVector", ChangeVector);
                    break;
                case ChangeKind.Index:
                    w.WriteString("Type", Type);
                    w.WriteString("Name", Name);
                    break;
                case ChangeKind.Operation:
                    w.WriteNumber("OperationId", Value);
                    w.WritePropertyName("State");
                    if (State == null)
                        w.WriteNullValue();
                    else
                        w.WriteRawValue(State, skipInputValidation: true);
                    break;
            }
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }
#pragma warning restore CA1507
}

/// <summary>
/// Changes handed to every connection at once (the commits the dispatcher found waiting). Each notification is
/// serialized at most once, and the whole run is also kept comma-joined in pieces of at most <see cref="PieceSize"/>
/// notifications, so that a connection that wants every change in it queues those pieces — one queue write per
/// piece, whatever the number of connections — instead of one per notification. Used by the dispatcher's thread only.
/// </summary>
public sealed class ChangeBatch
{
    /// <summary>Notifications in one joined piece at most (a connection's frames are built from whole pieces).</summary>
    public const int PieceSize = 256;

    private readonly List<ChangeEvent> _changes = [];
    private readonly List<byte[]?> _json = [];
    private List<QueuedNotifications>? _pieces;
    private int _kinds;

    /// <summary>The changes, in commit order.</summary>
    public IReadOnlyList<ChangeEvent> Changes => _changes;

    /// <summary>One bit (1 &lt;&lt; kind) for each <see cref="ChangeKind"/> present.</summary>
    public int Kinds => _kinds;

    /// <summary>Adds a commit's changes.</summary>
    public void AddRange(IReadOnlyList<ChangeEvent> changes)
    {
        foreach (var c in changes)
        {
            _changes.Add(c);
            _json.Add(null);
            _kinds |= 1 << (int)c.Kind;
        }
    }

    /// <summary>The notification of change <paramref name="i"/> as the clients read it.</summary>
    public byte[] Json(int i) => _json[i] ??= _changes[i].ToJson();

    /// <summary>Every notification, comma-joined in pieces of at most <see cref="PieceSize"/>.</summary>
    public IReadOnlyList<QueuedNotifications> Joined()
    {
        if (_pieces != null)
            return _pieces;
        var buffer = new ArrayBufferWriter<byte>(_changes.Count * 160);
        var ends = new List<int>();
        for (int i = 0; i < _changes.Count; i++)
        {
            if (i % PieceSize != 0)
                buffer.Write(","u8);
            buffer.Write(Json(i));
            if (i % PieceSize == PieceSize - 1 || i == _changes.Count - 1)
                ends.Add(buffer.WrittenCount);
        }
        var bytes = buffer.WrittenMemory;
        _pieces = new List<QueuedNotifications>(ends.Count);
        for (int p = 0; p < ends.Count; p++)
        {
            int start = p == 0 ? 0 : ends[p - 1];
            _pieces.Add(new QueuedNotifications(bytes[start..ends[p]], Math.Min(PieceSize, _changes.Count - p * PieceSize)));
        }
        return _pieces;
    }
}

/// <summary>Notifications waiting for a connection's socket: <see cref="Count"/> of them in <see cref="Bytes"/>, separated by commas.</summary>
public readonly record struct QueuedNotifications(ReadOnlyMemory<byte> Bytes, int Count);

/// <summary>A connection's interest in changes, and where matching ones go.</summary>
public interface IChangeSubscriber
{
    /// <summary>Queues the notifications of the changes the connection asked for; never blocks (a full queue closes the connection).</summary>
    void Offer(ChangeBatch batch);

    /// <summary>Ends the connection (the database is closing).</summary>
    void Close(string reason);
}

/// <summary>
/// The changes of one database, handed to its changes API connections. Writers publish a committed
/// transaction's changes with one non-blocking queue write (<see cref="Publish(IReadOnlyList{ChangeEvent})"/>); a dispatcher task
/// gathers what waits into one <see cref="ChangeBatch"/> (each change serialized once) and offers it to every
/// connection, each of which queues what it wants in its own bounded queue — so neither a slow connection nor many
/// of them slow the writes. With no connection, writes record nothing (<see cref="Listening"/>).
/// </summary>
public sealed class ChangeFeed : IDisposable
{
    /// <summary>Changes gathered into one batch at most (more wait for the next).</summary>
    private const int MaxGathered = 4 * ChangeBatch.PieceSize;

    private readonly Channel<IReadOnlyList<ChangeEvent>> _pending = Channel.CreateUnbounded<IReadOnlyList<ChangeEvent>>(new UnboundedChannelOptions { SingleReader = true });
    private readonly object _lock = new();
    private IChangeSubscriber[] _subscribers = [];
    private readonly Task _dispatcher;

    /// <summary>Starts the dispatcher.</summary>
    public ChangeFeed() => _dispatcher = Task.Run(DispatchAsync);

    /// <summary>True while a connection is open: writers record their changes only then.</summary>
    public bool Listening => Volatile.Read(ref _subscribers).Length > 0;

    /// <summary>Adds a connection.</summary>
    public void Subscribe(IChangeSubscriber subscriber)
    {
        lock (_lock)
            _subscribers = [.. _subscribers, subscriber];
    }

    /// <summary>Removes a connection.</summary>
    public void Unsubscribe(IChangeSubscriber subscriber)
    {
        lock (_lock)
            _subscribers = _subscribers.Where(s => !ReferenceEquals(s, subscriber)).ToArray();
    }

    /// <summary>Hands over the changes of a durable commit (or one change), in order.</summary>
    public void Publish(IReadOnlyList<ChangeEvent> changes)
    {
        if (changes.Count > 0 && Listening)
            _pending.Writer.TryWrite(changes);
    }

    /// <summary>Publishes one change when anyone listens.</summary>
    public void Publish(ChangeEvent change)
    {
        if (Listening)
            _pending.Writer.TryWrite([change]);
    }

    private async Task DispatchAsync()
    {
        var reader = _pending.Reader;
        while (await reader.WaitToReadAsync().ConfigureAwait(false))
        {
            var batch = new ChangeBatch();
            while (batch.Changes.Count < MaxGathered && reader.TryRead(out var changes))
                batch.AddRange(changes);
            foreach (var s in Volatile.Read(ref _subscribers))
                s.Offer(batch);
        }
    }

    /// <summary>Ends every connection (the database is closing: their requests must end for it to close).</summary>
    public void CloseAll(string reason)
    {
        foreach (var s in Volatile.Read(ref _subscribers))
            s.Close(reason);
    }

    /// <inheritdoc />
    public void Dispose()
    {
        _pending.Writer.TryComplete();
        try
        {
            _dispatcher.Wait(TimeSpan.FromSeconds(5));
        }
        catch (AggregateException)
        {
            // A subscriber's failure ends only its own connection; nothing to report at shutdown.
        }
    }
}
