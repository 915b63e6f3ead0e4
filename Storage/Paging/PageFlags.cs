namespace RavenLite.Storage.Paging;

/// <summary>Page kind, persisted in <see cref="PageHeader.Flags"/> (values frozen by FormatTests).</summary>
[Flags]
public enum PageFlags : ushort
{
    /// <summary>Unused.</summary>
    None = 0,
    /// <summary>B+Tree branch: nodes hold child page numbers.</summary>
    Branch = 1,
    /// <summary>B+Tree leaf: nodes hold values or overflow references.</summary>
    Leaf = 2,
    /// <summary>First page of a run holding one large value.</summary>
    Overflow = 4,
}
