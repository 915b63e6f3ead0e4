namespace RavenLite.Storage.Checking;

/// <summary>What <see cref="StorageChecker"/> found. Empty <see cref="Findings"/> means consistent.</summary>
public sealed class CheckReport
{
    /// <summary>Every inconsistency found, one sentence each.</summary>
    public List<string> Findings { get; } = [];

    /// <summary>True when nothing was found.</summary>
    public bool IsValid => Findings.Count == 0;

    /// <summary>Trees walked (including the root tree).</summary>
    public int Trees { get; set; }

    /// <summary>Pages reachable from the root tree.</summary>
    public long ReachablePages { get; set; }

    /// <summary>Free pages.</summary>
    public long FreePages { get; set; }

    /// <summary>Pages freed but not yet reusable.</summary>
    public long PendingPages { get; set; }

    /// <summary>Pages in use or free (the data file's logical size).</summary>
    public long TotalPages { get; set; }

    /// <summary>Non-root tree pages less than a quarter full (legal after deletes when no merge fits; reported for fill statistics).</summary>
    public long UnderfilledPages { get; set; }

    /// <summary>Entries across all trees, the root tree's one entry per named tree included.</summary>
    public long Entries { get; set; }

    /// <inheritdoc />
    public override string ToString() =>
        $"{(IsValid ? "OK" : $"{Findings.Count} finding(s)")}: {Trees} trees, {Entries} entries, {ReachablePages} reachable pages, {FreePages} free, {PendingPages} pending, {TotalPages} total, {UnderfilledPages} underfilled"
        + (IsValid ? "" : Environment.NewLine + string.Join(Environment.NewLine, Findings.Take(50)));
}
