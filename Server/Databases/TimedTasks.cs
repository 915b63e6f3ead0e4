using System.Text.Json.Nodes;
using RavenLite.Server.Documents;
using RavenLite.Server.Expiration;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Databases;

/// <summary>
/// A database's timed background work, checked every second: deleting expired documents (<c>@expires</c> passed) and
/// refreshing documents (<c>@refresh</c> passed: the document is written again without <c>@refresh</c>, so indexes
/// see it) while the matching configuration is enabled, every <c>DeleteFrequencyInSec</c> / <c>RefreshFrequencyInSec</c>
/// — each round takes what is due from the time-ordered trees of <see cref="ExpirationStore"/>, at most
/// <c>MaxItemsToProcess</c> (default 10,000), in merger commands of up to 1,024 documents — and running the
/// time-series rollup and retention policies every <c>PolicyCheckFrequency</c> (<see cref="TimeSeries.TimeSeriesPolicies"/>),
/// and deleting compare-exchange values whose <c>@expires</c> passed (every minute, or at the expiration frequency).
/// </summary>
public sealed class TimedTasks : IDisposable
{
    private const int CommandSize = 1024;
    private readonly Database _db;
    private readonly ILogger _logger;
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _loop;
    private DateTime _lastExpiration = DateTime.MinValue, _lastRefresh = DateTime.MinValue, _lastPolicies = DateTime.MinValue, _lastValues = DateTime.MinValue;

    /// <summary>Starts the task.</summary>
    public TimedTasks(Database db, ILogger logger)
    {
        _db = db;
        _logger = logger;
        _loop = Task.Run(LoopAsync);
    }

    private async Task LoopAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(TimeSpan.FromSeconds(1), _stop.Token).ConfigureAwait(false);
                var now = DateTime.UtcNow;
                if (_db.Expiration.Expiration is { Disabled: false } e && now - _lastExpiration >= TimeSpan.FromSeconds(e.FrequencyInSec))
                {
                    _lastExpiration = now;
                    await RunAsync(refresh: false, now, e.MaxItemsToProcess ?? 10_000, _stop.Token).ConfigureAwait(false);
                }
                if (_db.Expiration.Refresh is { Disabled: false } r && now - _lastRefresh >= TimeSpan.FromSeconds(r.FrequencyInSec))
                {
                    _lastRefresh = now;
                    await RunAsync(refresh: true, now, r.MaxItemsToProcess ?? 10_000, _stop.Token).ConfigureAwait(false);
                }
                // Compare-exchange values past their @expires go whether or not documents expire: every minute, or at
                // the expiration configuration's frequency when there is one.
                var valuesEvery = _db.Expiration.Expiration is { Disabled: false } ex ? TimeSpan.FromSeconds(ex.FrequencyInSec) : TimeSpan.FromMinutes(1);
                if (now - _lastValues >= valuesEvery)
                {
                    _lastValues = now;
                    await ExpireValuesAsync(now, _stop.Token).ConfigureAwait(false);
                }
                if (_db.TimeSeries.Configuration is { } ts && now - _lastPolicies >= ts.PolicyCheckFrequency)
                {
                    _lastPolicies = now;
                    await TimeSeries.TimeSeriesPolicies.RunAsync(_db.Documents, _db.Merger, now, _stop.Token).ConfigureAwait(false);
                }
            }
            catch (OperationCanceledException) when (_stop.IsCancellationRequested)
            {
                return;
            }
            catch (Exception ex) when (ex is not OutOfMemoryException)
            {
                // A failed round (the database closing, a full disk) is retried next time.
                Logging.Log.TimedTaskFailed(_logger, ex, _db.Name);
            }
        }
    }

    /// <summary>One round: deletes (or refreshes) the documents due at <paramref name="now"/>; returns how many.</summary>
    public async Task<int> RunAsync(bool refresh, DateTime now, long max, CancellationToken cancellationToken)
    {
        List<byte[]> due;
        using (var tx = _db.Environment.ReadTransaction())
            due = ExpirationStore.Due(tx, refresh ? ExpirationStore.RefreshTree : ExpirationStore.ExpiresTree, now, (int)Math.Min(max, int.MaxValue));
        int done = 0;
        foreach (var chunk in due.Chunk(CommandSize))
        {
            cancellationToken.ThrowIfCancellationRequested();
            var command = new DelegateCommand<int>(ctx =>
            {
                int n = 0;
                foreach (var key in chunk)
                {
                    var doc = ctx.Get(Encoding.UTF8.GetString(key));
                    if (doc == null)
                        continue;
                    var (expires, refreshAt) = MetadataDates.Read(doc.Json);
                    if (!refresh && expires is { } at && at <= now.Ticks)
                    {
                        ctx.Delete(doc.Id, null);
                        n++;
                    }
                    else if (refresh && refreshAt is { } r && r <= now.Ticks)
                    {
                        var json = JsonNode.Parse(doc.Json)!.AsObject();
                        (json["@metadata"] as JsonObject)?.Remove("@refresh");
                        ctx.Put(doc.Id, Encoding.UTF8.GetBytes(json.ToJsonString()), null);
                        n++;
                    }
                }
                return n;
            });
            await _db.Merger.EnqueueAsync(command).ConfigureAwait(false);
            done += command.Result;
        }
        if (done > 0)
            Logging.Log.ExpirationRound(_logger, _db.Name, refresh ? "refreshed" : "deleted", done);
        return done;
    }

    /// <summary>Deletes the compare-exchange values whose <c>@expires</c> passed; returns how many.</summary>
    public async Task<int> ExpireValuesAsync(DateTime now, CancellationToken cancellationToken)
    {
        List<string> due;
        using (var tx = _db.Environment.ReadTransaction())
            due = CompareExchange.CompareExchangeStore.Expired(tx, now, 10_000);
        int done = 0;
        foreach (var chunk in due.Chunk(CommandSize))
        {
            cancellationToken.ThrowIfCancellationRequested();
            var command = new DelegateCommand<int>(ctx => chunk.Count(key => CompareExchange.CompareExchangeStore.DeleteIfExpired(ctx.Transaction, key, now)));
            await _db.Merger.EnqueueAsync(command).ConfigureAwait(false);
            done += command.Result;
        }
        if (done > 0)
            Logging.Log.CompareExchangeExpired(_logger, _db.Name, done);
        return done;
    }

    /// <summary>Stops the task (waits for a round in progress).</summary>
    public void Dispose()
    {
        _stop.Cancel();
        try
        {
            _loop.Wait(TimeSpan.FromSeconds(30));
        }
        catch (AggregateException)
        {
            // The loop ends by cancellation.
        }
        _stop.Dispose();
    }
}
