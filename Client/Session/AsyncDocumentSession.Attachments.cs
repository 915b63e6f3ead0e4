using System.Text.Json.Nodes;
using RavenLite.Client.Attachments;

namespace RavenLite.Client.Session;

/// <summary>Attachments: commands queued for SaveChanges (with their streams), reads sent at once.</summary>
internal sealed partial class AsyncDocumentSession
{
    public IAttachmentsSessionOperations Attachments => _attachments ??= new SessionAttachments(this);

    private SessionAttachments? _attachments;

    /// <summary>After a save, a tracked document follows its attachment changes: its change vector and <c>@attachments</c>.</summary>
    private void ApplyAttachmentResult(JsonObject r)
    {
        string? type = (string?)r["Type"];
        string? cv = (string?)r["DocumentChangeVector"];
        void Update(string? id, Action<JsonArray> change)
        {
            if (id == null || !_byId.TryGetValue(id, out var info))
                return;
            if (cv != null)
            {
                info.ChangeVector = cv;
                info.Metadata["@change-vector"] = cv;
            }
            var list = info.Metadata["@attachments"] as JsonArray ?? [];
            change(list);
            info.Metadata["@attachments"] = list.Count > 0 ? list : null;
            if (list.Count == 0)
                info.Metadata.Remove("@attachments");
            info.Original = ToDocument(info).ToJsonString();
        }
        static void Remove(JsonArray list, string? name)
        {
            for (int i = list.Count - 1; i >= 0; i--)
                if (string.Equals((string?)list[i]?["Name"], name, StringComparison.OrdinalIgnoreCase))
                    list.RemoveAt(i);
        }
        void Add(JsonArray list, string? name)
        {
            Remove(list, name);
            list.Add(new JsonObject { ["Name"] = name, ["Hash"] = (string?)r["Hash"], ["ContentType"] = (string?)r["ContentType"], ["Size"] = (long?)r["Size"] });
        }
        switch (type)
        {
            case "AttachmentPUT":
            case "AttachmentCOPY":
                Update((string?)r["Id"], l => Add(l, (string?)r["Name"]));
                break;
            case "AttachmentDELETE":
                Update((string?)r["@id"], l => Remove(l, (string?)r["Name"]));
                break;
            case "AttachmentMOVE":
                string? source = (string?)r["Id"], destination = (string?)r["DestinationId"];
                if (!string.Equals(source, destination, StringComparison.OrdinalIgnoreCase))
                    cv = null; // the answer carries the destination's change vector
                Update(source, l => Remove(l, (string?)r["Name"]));
                cv = (string?)r["DocumentChangeVector"];
                Update(destination, l => Add(l, (string?)r["DestinationName"]));
                break;
        }
    }

    /// <summary>The attachments of this session: commands queued for SaveChanges, reads sent at once.</summary>
    private sealed class SessionAttachments(AsyncDocumentSession session) : IAttachmentsSessionOperations
    {
        private void Queue(JsonObject command)
        {
            session.ThrowIfDisposed();
            session._attachmentCommands.Add(command);
        }

        public void Store(string documentId, string name, Stream stream, string? contentType = null)
        {
            ArgumentException.ThrowIfNullOrEmpty(documentId);
            ArgumentException.ThrowIfNullOrEmpty(name);
            ArgumentNullException.ThrowIfNull(stream);
            if (session._attachmentStreams.Contains(stream))
                throw new InvalidOperationException("This stream is already stored as another attachment in this session.");
            Queue(new JsonObject { ["Id"] = documentId, ["Name"] = name, ["ContentType"] = contentType, ["ChangeVector"] = null, ["Type"] = "AttachmentPUT" });
            session._attachmentStreams.Add(stream);
        }

        public void Store(object entity, string name, Stream stream, string? contentType = null) => Store(session.Tracked(entity).Id, name, stream, contentType);

        public void Delete(string documentId, string name) =>
            Queue(new JsonObject { ["Id"] = documentId, ["Name"] = name, ["ChangeVector"] = null, ["Type"] = "AttachmentDELETE" });

        public void Copy(string sourceDocumentId, string sourceName, string destinationDocumentId, string destinationName) =>
            Queue(new JsonObject { ["Id"] = sourceDocumentId, ["Name"] = sourceName, ["DestinationId"] = destinationDocumentId, ["DestinationName"] = destinationName, ["Type"] = "AttachmentCOPY" });

        public void Move(string sourceDocumentId, string sourceName, string destinationDocumentId, string destinationName) =>
            Queue(new JsonObject { ["Id"] = sourceDocumentId, ["Name"] = sourceName, ["DestinationId"] = destinationDocumentId, ["DestinationName"] = destinationName, ["Type"] = "AttachmentMOVE" });

        public void Rename(string documentId, string name, string newName) => Move(documentId, name, documentId, newName);

        public async Task<AttachmentResult?> GetAsync(string documentId, string name, CancellationToken cancellationToken = default)
        {
            session.ThrowIfDisposed();
            session.CountRequest();
            return await session.Store.Executor.ExecuteAsync(new GetAttachmentOperation(documentId, name).GetCommand(session.Conventions), session.Database, cancellationToken).ConfigureAwait(false);
        }

        public async Task<bool> ExistsAsync(string documentId, string name, CancellationToken cancellationToken = default)
        {
            session.ThrowIfDisposed();
            session.CountRequest();
            return await session.Store.Executor.ExecuteAsync(new HeadAttachmentCommand(documentId, name), session.Database, cancellationToken).ConfigureAwait(false);
        }

        public IReadOnlyList<AttachmentName> GetNames(object entity) => AttachmentNames.Of(session.Tracked(entity).Metadata);
    }
}
