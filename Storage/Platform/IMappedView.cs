namespace RavenLite.Storage.Platform;

/// <summary>A read-only mapping of a file. Pointers into it are valid until it is disposed.</summary>
public unsafe interface IMappedView : IDisposable
{
    /// <summary>Address of file offset 0.</summary>
    byte* Pointer { get; }

    /// <summary>Bytes of address space mapped.</summary>
    long Capacity { get; }
}
