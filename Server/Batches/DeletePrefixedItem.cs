using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>
/// RavenDB's <c>DeletePrefixedCommandData</c> (<c>{"Type": "DELETE", "Id": prefix, "IdPrefixed": true}</c>): every
/// document whose id starts with the prefix goes, in the batch's transaction. RavenDB ETL sends it to remove what it
/// loaded before for a source document (<c>{id}/{collection}/...</c>).
/// </summary>
internal sealed class DeletePrefixedItem(string prefix) : BatchItem(prefix, null)
{
    private int _deleted;

    public override void Execute(DocumentsWriteContext context)
    {
        // Collected first: deleting while a cursor walks the same tree would skip entries.
        var ids = context.Storage.ScanStartingWith(context.Transaction, Id, _ => true, null).Select(d => d.Id).ToList();
        foreach (string id in ids)
            if (context.Delete(id, null).Deleted)
                _deleted++;
    }

    public override void WriteResult(Utf8JsonWriter w)
    {
        w.WriteString("Type", "DELETE");
        w.WriteString("Id", Id);
        w.WriteBoolean("Deleted", _deleted > 0);
    }
}
