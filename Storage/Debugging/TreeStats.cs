namespace RavenLite.Storage.Debugging;

/// <summary>Per-tree statistics from its header.</summary>
public sealed record TreeStats(string Name, int Depth, long Entries, long BranchPages, long LeafPages, long OverflowPages);
