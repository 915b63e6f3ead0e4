using RavenLite.Server.Attachments;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Batches;

/// <summary>An attachment command: PUT (content staged from the multipart batch), DELETE, COPY or MOVE.</summary>
internal sealed class AttachmentItem(string id, string? cv, AttachmentItem.Kind kind, string name, string? destinationId, string? destinationName,
    string? contentType, StagedContent? content) : BatchItem(id, cv)
{
    public enum Kind { Put, Delete, Copy, Move }

    private AttachmentWrite? _write;
    private DocumentVersion? _deleted;

    public override void Execute(DocumentsWriteContext context) => Execute(context, AttachmentVersions.Immediate);

    /// <summary>Runs the command, its document's new version held in <paramref name="versions"/> (the batch's: written once at its end).</summary>
    public void Execute(DocumentsWriteContext context, AttachmentVersions versions)
    {
        switch (kind)
        {
            case Kind.Put:
                _write = AttachmentOperations.Put(context, Id, name, contentType, content!, ChangeVector, versions);
                break;
            case Kind.Delete:
                _deleted = AttachmentOperations.Delete(context, Id, name, ChangeVector, versions);
                break;
            case Kind.Copy:
                _write = AttachmentOperations.Copy(context, Id, name, destinationId!, destinationName!, ChangeVector, versions);
                break;
            case Kind.Move:
                _write = AttachmentOperations.Move(context, Id, name, destinationId!, destinationName!, ChangeVector, versions);
                break;
        }
    }

    public override void WriteResult(Utf8JsonWriter w)
    {
        switch (kind)
        {
            case Kind.Delete:
                w.WriteString("Type", "AttachmentDELETE");
                w.WriteString("@id", Id);
                w.WriteString("Name", name);
                if (_deleted?.ChangeVector is { } changeVector)
                    w.WriteString("DocumentChangeVector", changeVector);
                return;
            case Kind.Put:
                w.WriteString("Type", "AttachmentPUT");
                w.WriteString("@id", _write!.DocumentId);
                w.WriteString("Id", _write.DocumentId);
                break;
            case Kind.Copy:
                w.WriteString("Type", "AttachmentCOPY");
                w.WriteString("Id", _write!.DocumentId);
                break;
            case Kind.Move:
                w.WriteString("Type", "AttachmentMOVE");
                w.WriteString("Id", Id);
                w.WriteString("DestinationId", _write!.DocumentId);
                w.WriteString("DestinationName", _write.Name);
                break;
        }
        var write = _write!;
        w.WriteString("Name", kind == Kind.Move ? name : write.Name);
        w.WriteString("ChangeVector", write.ChangeVector);
        w.WriteString("DocumentChangeVector", write.DocumentChangeVector);
        w.WriteString("Hash", write.Info.Hash);
        w.WriteString("ContentType", write.Info.ContentType);
        w.WriteNumber("Size", write.Info.Size);
    }
}
