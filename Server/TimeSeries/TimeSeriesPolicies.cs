using RavenLite.Server.Documents;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.TimeSeries;

/// <summary>
/// Runs a database's time-series policies (every <see cref="TimeSeriesConfiguration.PolicyCheckFrequency"/>): for each
/// series of each document of a configured collection, the policies (ordered by period) aggregate each complete period
/// into series <c>{name}@{policy}</c> (one entry per period, at its start; per raw value six values: first, last, min,
/// max, sum, count) — the first from the raw entries, each next one from the rollup before it — then entries older than
/// the retention are removed: raw ones per the raw policy, rollups per their policy. The periods since the rollup's last entry are (re)computed, so a late raw entry in an open period is
/// counted. One merger command per document.
/// </summary>
public static class TimeSeriesPolicies
{
    /// <summary>One round at <paramref name="now"/> over <paramref name="documents"/>, writing through <paramref name="merger"/>; returns the documents whose series changed.</summary>
    public static async Task<int> RunAsync(DocumentsStorage documents, WriteMerger merger, DateTime now, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(documents);
        ArgumentNullException.ThrowIfNull(merger);
        if (documents.Extension<TimeSeriesExtension>().Configuration is not { } configuration)
            return 0;
        int changed = 0;
        foreach (var (collection, settings) in configuration.Collections)
        {
            if (settings.Disabled || (settings.Policies.Count == 0 && settings.RawRetention.IsUnbounded))
                continue;
            var work = new List<(string Id, List<string> Series)>();
            using (var tx = documents.Environment.ReadTransaction())
                foreach (var doc in documents.Scan(tx, collection))
                    if (DocumentExtras.Read(doc.Json) is { TimeSeries.Count: > 0 } extras)
                        work.Add((doc.Id, extras.TimeSeries.Where(n => !n.Contains('@', StringComparison.Ordinal)).ToList()));
            foreach (var (id, series) in work)
            {
                cancellationToken.ThrowIfCancellationRequested();
                var command = new DelegateCommand<bool>(ctx => Apply(ctx, id, series, settings, now));
                await merger.EnqueueAsync(command).ConfigureAwait(false);
                if (command.Result)
                    changed++;
            }
        }
        return changed;
    }

    private static bool Apply(DocumentsWriteContext ctx, string id, List<string> series, TimeSeriesCollectionConfiguration settings, DateTime now)
    {
        if (ctx.Find(id) is not var (storedId, _))
            return false;
        var key = ctx.KeyOf(storedId);
        var tx = ctx.Transaction;
        bool any = false;
        var names = new List<(string Name, bool Exists)>();
        foreach (string name in series)
        {
            // Policies chain (RavenDB's rule): the first rolls up the raw entries, each next one the rollup before it,
            // so a coarse period is complete even after a finer level's retention removed its sources.
            string source = name;
            bool sourceIsRollup = false;
            // Entries changed since the last run (late or deleted raw entries) make their periods roll up again, down the
            // chain — but never periods older than the source's retention, whose entries are gone.
            long? changed = TimeSeriesStore.TakeChanged(tx, key, name);
            var sourceRetention = settings.RawRetention;
            foreach (var policy in settings.Policies)
            {
                string rollup = name + "@" + policy.Name;
                long period = policy.AggregationTime.Milliseconds;
                if (changed is { } c && !sourceRetention.IsUnbounded)
                {
                    long kept = TimeSeriesPoint.ToMilliseconds(sourceRetention.Before(now));
                    changed = Math.Max(c, (kept + period - 1) / period * period);
                }
                any |= Rollup(ctx, key, source, sourceIsRollup, rollup, period, now, changed);
                if (changed is { } d)
                    changed = d / period * period; // the rollup changed from this period on
                source = rollup;
                sourceIsRollup = true;
                sourceRetention = policy.RetentionTime;
            }
            foreach (var policy in settings.Policies)
            {
                string rollup = name + "@" + policy.Name;
                any |= Retain(ctx, key, rollup, policy.RetentionTime, now);
                names.Add((rollup, TimeSeriesStore.Exists(tx, key, rollup)));
            }
            any |= Retain(ctx, key, name, settings.RawRetention, now);
            names.Add((name, TimeSeriesStore.Exists(tx, key, name)));
        }
        ctx.UpdateExtras(storedId, extras =>
        {
            bool changed = false;
            foreach (var (name, exists) in names)
                changed |= exists ? extras.TimeSeries.Add(name) : extras.TimeSeries.Remove(name);
            return changed;
        });
        return any;
    }

    /// <summary>
    /// Aggregates the complete periods since the rollup's last entry from <paramref name="raw"/> (raw entries, or with
    /// <paramref name="sourceIsRollup"/> a finer rollup, whose six values per position combine: first of firsts, last of
    /// lasts, min of mins, max of maxes, sums of sums and of counts), and again from <paramref name="changedFrom"/>'s period
    /// when entries changed there since the last run; true when it wrote any.
    /// </summary>
    private static bool Rollup(DocumentsWriteContext ctx, byte[] key, string raw, bool sourceIsRollup, string rollup, long period, DateTime now, long? changedFrom)
    {
        var tx = ctx.Transaction;
        long end = TimeSeriesPoint.ToMilliseconds(now) / period * period; // periods before this one are complete
        long start = TimeSeriesStore.Statistics(tx, key, rollup) is var (_, _, last)
            ? TimeSeriesPoint.ToMilliseconds(last) / period * period
            : TimeSeriesStore.Statistics(tx, key, raw) is var (_, first, _) ? TimeSeriesPoint.ToMilliseconds(first) / period * period : end;
        if (changedFrom is { } c && c / period * period < start)
            start = c / period * period;
        if (start >= end)
            return false;
        var aggregated = new List<TimeSeriesPoint>();
        foreach (var group in TimeSeriesStore.Read(tx, key, raw, start, end - 1).GroupBy(p => p.Milliseconds / period * period))
        {
            var points = group.ToList();
            aggregated.Add(new TimeSeriesPoint(group.Key, sourceIsRollup ? Combine(points) : Aggregate(points), null));
        }
        // The range's rollup entries are replaced (periods whose sources are all gone lose theirs).
        bool changed = aggregated.Count > 0;
        TimeSeriesStore.Change(tx, key, rollup, start, end - 1, existing =>
        {
            var kept = existing.Where(p => p.Milliseconds < start || p.Milliseconds >= end).ToList();
            changed |= kept.Count != existing.Count;
            return [.. kept, .. aggregated];
        });
        return changed;
    }

    /// <summary>Raw entries → per value position: first, last, min, max, sum, count (at most 32 values: five positions).</summary>
    private static double[] Aggregate(List<TimeSeriesPoint> points)
    {
        int width = points.Max(p => p.Values.Length);
        var values = new double[Math.Min(width * 6, TimeSeriesSegment.MaxValues / 6 * 6)];
        for (int i = 0; i * 6 < values.Length; i++)
        {
            var column = points.Where(p => i < p.Values.Length).Select(p => p.Values[i]).ToList();
            values[i * 6] = column[0];
            values[(i * 6) + 1] = column[^1];
            values[(i * 6) + 2] = column.Min();
            values[(i * 6) + 3] = column.Max();
            values[(i * 6) + 4] = column.Sum();
            values[(i * 6) + 5] = column.Count;
        }
        return values;
    }

    /// <summary>Rollup entries (six values per position) → one covering them all.</summary>
    private static double[] Combine(List<TimeSeriesPoint> points)
    {
        var values = (double[])points[0].Values.Clone();
        foreach (var p in points.Skip(1))
            for (int i = 0; i + 5 < Math.Min(values.Length, p.Values.Length); i += 6)
            {
                values[i + 1] = p.Values[i + 1];
                values[i + 2] = Math.Min(values[i + 2], p.Values[i + 2]);
                values[i + 3] = Math.Max(values[i + 3], p.Values[i + 3]);
                values[i + 4] += p.Values[i + 4];
                values[i + 5] += p.Values[i + 5];
            }
        return values;
    }

    /// <summary>Removes entries older than the retention; true when it removed any.</summary>
    private static bool Retain(DocumentsWriteContext ctx, byte[] key, string name, TimeValue retention, DateTime now)
    {
        if (retention.IsUnbounded)
            return false;
        long cutoff = TimeSeriesPoint.ToMilliseconds(retention.Before(now));
        bool removed = false;
        TimeSeriesStore.Change(ctx.Transaction, key, name, 0, cutoff - 1, existing =>
        {
            var kept = existing.Where(p => p.Milliseconds >= cutoff).ToList();
            removed = kept.Count != existing.Count;
            return kept;
        });
        if (removed)
            IncrementalShares.Delete(ctx.Transaction, key, name, 0, cutoff - 1);
        return removed;
    }
}
