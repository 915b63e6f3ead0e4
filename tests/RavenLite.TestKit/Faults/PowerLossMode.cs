namespace RavenLite.TestKit.Faults;

/// <summary>What a simulated power loss does to writes that were never synced.</summary>
public enum PowerLossMode
{
    /// <summary>Every unsynced write is lost; unsynced file creations are lost.</summary>
    DropUnsynced,
    /// <summary>Each unsynced write independently survives or is lost (reordering).</summary>
    KeepRandomSubset,
    /// <summary>Each unsynced write survives whole, is lost, or survives in part at 512-byte or 4 KB granularity.</summary>
    TearUnsynced,
}
