using System.Text.Json.Nodes;

namespace RavenLite.Client.Session;

/// <summary>Patches queued for SaveChanges.</summary>
internal sealed partial class AsyncDocumentSession
{
    public void Patch(string id, Patching.PatchRequest patch, Patching.PatchRequest? patchIfMissing = null)
    {
        ArgumentException.ThrowIfNullOrEmpty(id);
        ArgumentNullException.ThrowIfNull(patch);
        ThrowIfDisposed();
        _patches.Add(new JsonObject
        {
            ["Id"] = id,
            ["ChangeVector"] = null,
            ["Patch"] = patch.ToJson(Conventions),
            ["PatchIfMissing"] = patchIfMissing?.ToJson(Conventions),
            ["Type"] = "PATCH",
        });
    }

    public void Increment(string id, string path, long delta)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        if (!System.Text.RegularExpressions.Regex.IsMatch(path, @"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$"))
            throw new ArgumentException($"'{path}' is not a property path (names separated by dots).", nameof(path));
        Patch(id, new Patching.PatchRequest($"this.{path} = (this.{path} || 0) + args.delta;", new Dictionary<string, object?> { ["delta"] = delta }));
    }
}
