using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>One command of a batch: applied in the batch's transaction (re-runnable), then its result written.</summary>
internal abstract class BatchItem(string id, string? changeVector)
{
    /// <summary>The document's id (an identity id <c>prefix|</c> may be resolved before the batch is queued).</summary>
    public string Id { get; set; } = id;

    public string? ChangeVector { get; } = changeVector;

    /// <summary>A document command in a cluster-wide transaction: the change vector the session loaded (null: it expects a new document).</summary>
    public string? OriginalChangeVector { get; init; }

    public abstract void Execute(DocumentsWriteContext context);

    /// <summary>Writes the properties of this command's entry in <c>Results</c>.</summary>
    public abstract void WriteResult(Utf8JsonWriter w);
}
