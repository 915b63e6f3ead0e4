using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.TimeSeries;

/// <summary>
/// Time series as a document extension: a deleted document's series go with it, and the time-series configuration
/// (retention and rollup policies; JSON in the <c>State</c> tree) is held here.
/// </summary>
public sealed class TimeSeriesExtension : IDocumentExtension
{
    private static readonly byte[] ConfigurationKey = "TimeSeriesConfiguration"u8.ToArray();

    /// <summary>Reads the stored configuration through <paramref name="tx"/>.</summary>
    public TimeSeriesExtension(Transaction tx)
    {
        using var json = DocumentsStorage.ReadState(tx, ConfigurationKey);
        Configuration = json == null ? null : TimeSeriesConfiguration.Parse(json.RootElement);
    }

    /// <summary>The time-series configuration (null: none; no policies run).</summary>
    public TimeSeriesConfiguration? Configuration { get; private set; }

    /// <summary>Stores the configuration and makes it current.</summary>
    public void Save(WriteTransaction tx, TimeSeriesConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        DocumentsStorage.WriteState(tx, ConfigurationKey, configuration.Write);
        Configuration = configuration;
    }

    /// <inheritdoc />
    public void AfterDelete(DocumentsWriteContext context, in DocumentDelete deleted)
    {
        if (deleted.Extras is { TimeSeries.Count: > 0 })
            TimeSeriesStore.DeleteAll(context.Transaction, deleted.Key);
    }
}
