namespace RavenLite.Server.Operations;

/// <summary>The JSON shape of an <see cref="OperationState"/>.</summary>
public static class OperationStateJson
{
    /// <summary>An operation's state as <c>/operations/state</c> answers it and the changes API sends it: <c>{Status, Result, Progress}</c>.</summary>
    public static void Write(Utf8JsonWriter w, OperationState state)
    {
        w.WriteStartObject();
        w.WriteString("Status", state.Status.ToString());
        switch (state.Status)
        {
            case OperationStatus.Completed when state.ResultJson != null:
                w.WritePropertyName("Result");
                w.WriteRawValue(state.ResultJson, skipInputValidation: true);
                w.WriteNull("Progress");
                break;
            case OperationStatus.Completed:
                w.WriteStartObject("Result");
                w.WriteString("$type", "Raven.Client.Documents.Operations.BulkOperationResult, Raven.Client");
                w.WriteNumber("Total", state.Total >= 0 ? state.Total : state.Processed);
                w.WriteNumber("DocumentsProcessed", state.Processed);
                w.WriteNumber("DocumentsSkipped", state.Skipped); // RavenLite's own: unchanged documents left as they were
                w.WriteEndObject();
                w.WriteNull("Progress");
                break;
            case OperationStatus.Faulted or OperationStatus.Canceled:
                w.WriteStartObject("Result");
                w.WriteString("$type", "Raven.Client.Documents.Operations.OperationExceptionResult, Raven.Client");
                w.WriteString("Type", state.ErrorType);
                w.WriteString("Message", state.Error);
                w.WriteString("Error", state.Error);
                w.WriteNumber("StatusCode", state.ErrorStatus);
                w.WriteEndObject();
                w.WriteNull("Progress");
                break;
            default:
                w.WriteNull("Result");
                w.WriteStartObject("Progress");
                w.WriteNumber("Processed", state.Processed);
                w.WriteNumber("DocumentsProcessed", state.Processed);
                if (state.Total >= 0)
                    w.WriteNumber("Total", state.Total);
                w.WriteEndObject();
                break;
        }
        w.WriteEndObject();
    }
}
