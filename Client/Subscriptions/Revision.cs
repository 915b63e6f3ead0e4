namespace RavenLite.Client.Subscriptions;

/// <summary>
/// An item of a subscription on revisions (<c>from Orders (Revisions = true)</c>): a document's version after one
/// change and the version before it (null for its first). Use as the worker's type: <c>GetSubscriptionWorker&lt;Revision&lt;Order&gt;&gt;</c>.
/// </summary>
/// <typeparam name="T">The document's type.</typeparam>
public sealed class Revision<T>
{
    /// <summary>The version before the change (null for the document's first revision).</summary>
    public T? Previous { get; set; }

    /// <summary>The version the change made.</summary>
    public T? Current { get; set; }
}
