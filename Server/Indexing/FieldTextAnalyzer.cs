using Lucene.Net.Analysis;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The index writer's analyzer: each Search field's text field (<see cref="SearchQuery.FieldName"/>) is
/// analyzed with that field's analyzer (<see cref="IndexField.TextAnalyzer"/>); nothing else the writer
/// sees is analyzed. Thread-safe.
/// </summary>
internal sealed class FieldTextAnalyzer(CompiledIndex index) : AnalyzerWrapper(PER_FIELD_REUSE_STRATEGY)
{
    protected override Analyzer GetWrappedAnalyzer(string fieldName) =>
        fieldName.Length > 1 && fieldName[0] == 's' && ushort.TryParse(fieldName.AsSpan(1), System.Globalization.CultureInfo.InvariantCulture, out ushort id)
            && index.Fields.FirstOrDefault(f => f.Id == id) is { } field
            ? field.TextAnalyzer
            : SearchAnalyzer.Instance;
}
