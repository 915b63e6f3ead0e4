using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Expiration;

/// <summary>
/// Expiration and refresh as a document extension: keeps the time-ordered trees of <see cref="ExpirationStore"/> in
/// step with each document's <c>@expires</c> / <c>@refresh</c>, and holds the two configurations (JSON in the
/// <c>State</c> tree) that the background task reads.
/// </summary>
public sealed class ExpirationExtension : IDocumentExtension
{
    private static readonly byte[] ExpirationKey = "ExpirationConfiguration"u8.ToArray();
    private static readonly byte[] RefreshKey = "RefreshConfiguration"u8.ToArray();
    private const string ExpirationFrequency = "DeleteFrequencyInSec";
    private const string RefreshFrequency = "RefreshFrequencyInSec";

    /// <summary>Reads the stored configurations through <paramref name="tx"/>.</summary>
    public ExpirationExtension(Transaction tx)
    {
        Expiration = Load(tx, ExpirationKey, ExpirationFrequency);
        Refresh = Load(tx, RefreshKey, RefreshFrequency);
    }

    /// <summary>The expiration configuration (null: none; the task deletes nothing).</summary>
    public ExpirationConfiguration? Expiration { get; private set; }

    /// <summary>The refresh configuration (null: none).</summary>
    public ExpirationConfiguration? Refresh { get; private set; }

    /// <summary>Stores an expiration (or, with <paramref name="refresh"/>, a refresh) configuration and makes it current.</summary>
    public void Save(WriteTransaction tx, bool refresh, ExpirationConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        DocumentsStorage.WriteState(tx, refresh ? RefreshKey : ExpirationKey, w => configuration.Write(w, refresh ? RefreshFrequency : ExpirationFrequency));
        if (refresh)
            Refresh = configuration;
        else
            Expiration = configuration;
    }

    /// <inheritdoc />
    public void AfterPut(DocumentsWriteContext context, in DocumentPut put)
    {
        if (put.Dates != put.DatesBefore)
            ExpirationStore.Update(context.Transaction, put.Key, put.DatesBefore, put.Dates);
    }

    /// <inheritdoc />
    public void AfterDelete(DocumentsWriteContext context, in DocumentDelete deleted)
    {
        if (deleted.Dates != default)
            ExpirationStore.Update(context.Transaction, deleted.Key, deleted.Dates, default);
    }

    private static ExpirationConfiguration? Load(Transaction tx, byte[] key, string frequencyName)
    {
        using var json = DocumentsStorage.ReadState(tx, key);
        return json == null ? null : ExpirationConfiguration.Parse(json.RootElement, frequencyName);
    }
}
