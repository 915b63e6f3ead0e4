using System.Net;
using System.Text;
using System.Text.Json;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;
using RavenLite.Server.Errors;
using RavenLite.Server.Hosting;

namespace RavenLite.Fuzz;

/// <summary>
/// A real RavenLite server (Kestrel on 127.0.0.1, a temp data directory) with database <see cref="Database"/>, for the
/// HTTP-facing targets. <see cref="Send"/> holds every answer to the rule of docs/reliability.md "Fuzzing": an input is
/// taken (2xx) or refused with a 4xx carrying RavenDB's error shape (<c>Type</c>, <c>Message</c>); a 5xx is a finding,
/// except the two RavenDB itself answers with 500 and an exception type its clients raise.
/// </summary>
public sealed class FuzzServer : IDisposable
{
    public const string Database = "fuzz";

    /// <summary>Per request: longer than this is a hang (libFuzzer's own -timeout is shorter when fuzzing).</summary>
    public static readonly TimeSpan RequestLimit = TimeSpan.FromSeconds(30);

    private static readonly string[] RavenDbServerErrors = [RavenExceptionTypes.IndexDoesNotExist, RavenExceptionTypes.SubscriptionDoesNotExist];

    private readonly string _dir = Path.Combine(Path.GetTempPath(), $"ravenlite-fuzz-{Guid.NewGuid():N}");
    private readonly WebApplication _app;
    private readonly LoggedErrors _errors = new();

    public FuzzServer()
    {
        Directory.CreateDirectory(_dir);
        _app = ServerHost.Build(["--DataDir", _dir, "--ServerUrl", "http://127.0.0.1:0", "--Logging:LogLevel:Default", "Error"], null,
            logging => logging.ClearProviders().AddProvider(_errors));
        _app.StartAsync().GetAwaiter().GetResult();
        Url = new Uri(ServerHost.Addresses(_app)[0]);
        Http = new HttpClient { BaseAddress = Url, Timeout = RequestLimit };
        Expect(Send(HttpMethod.Put, $"/admin/databases?name={Database}", Json($"{{\"DatabaseName\":\"{Database}\"}}")), HttpStatusCode.Created);
    }

    public Uri Url { get; }

    public HttpClient Http { get; }

    /// <summary>The running server's services (the TCP target asks for its port).</summary>
    public IServiceProvider Services => _app.Services;

    /// <summary>A request to the server; the answer checked (see the class comment).</summary>
    public Answer Send(HttpMethod method, string path, HttpContent? content = null)
    {
        using var request = new HttpRequestMessage(method, path) { Content = content };
        using var response = Http.Send(request);
        var body = response.Content.ReadAsByteArrayAsync().GetAwaiter().GetResult();
        var answer = new Answer(response.StatusCode, body);
        Check(method, path, answer);
        ThrowOnLoggedErrors();
        return answer;
    }

    /// <summary>Fails when the server logged an error since the last call (a failure no answer showed).</summary>
    public void ThrowOnLoggedErrors()
    {
        if (_errors.Take() is { Count: > 0 } errors)
            throw new FuzzFindingException("the server logged: " + string.Join("\n", errors));
    }

    /// <summary>A request on the fuzz database (<paramref name="path"/> after <c>/databases/fuzz</c>).</summary>
    public Answer SendToDatabase(HttpMethod method, string path, HttpContent? content = null) =>
        Send(method, $"/databases/{Database}{path}", content);

    private static void Check(HttpMethod method, string path, Answer a)
    {
        int status = (int)a.Status;
        if (status < 400)
            return;
        string? type = a.ErrorType();
        if (status >= 500 && (type == null || !RavenDbServerErrors.Contains(type)))
            throw new FuzzFindingException($"{method} {path} answered {status}: {a.Text}");
        if (type == null && a.Status != HttpStatusCode.NotFound)
            throw new FuzzFindingException($"{method} {path} answered {status} without RavenDB's error shape: {a.Text}");
    }

    /// <summary>Fails unless the answer has status <paramref name="expected"/> (setup steps, and checks after a 2xx).</summary>
    public static Answer Expect(Answer a, HttpStatusCode expected) =>
        a.Status == expected ? a : throw new FuzzFindingException($"expected {(int)expected}, got {(int)a.Status}: {a.Text}");

    public static ByteArrayContent Json(string json) => new(Encoding.UTF8.GetBytes(json));

    public void Dispose()
    {
        Http.Dispose();
        _app.StopAsync().GetAwaiter().GetResult();
        _app.DisposeAsync().AsTask().GetAwaiter().GetResult();
        try
        {
            Directory.Delete(_dir, recursive: true);
        }
        catch (IOException)
        {
            // left to the temp cleaner
        }
    }

    /// <summary>An answer: status and body.</summary>
    public sealed record Answer(HttpStatusCode Status, byte[] Body)
    {
        public string Text => Encoding.UTF8.GetString(Body);

        public bool IsSuccess => (int)Status is >= 200 and < 300;

        /// <summary>The <c>Type</c> of a RavenDB error body, or null when the body is not one.</summary>
        public string? ErrorType()
        {
            try
            {
                using var doc = JsonDocument.Parse(Body);
                return doc.RootElement.ValueKind == JsonValueKind.Object && doc.RootElement.TryGetProperty("Type", out var t) && t.ValueKind == JsonValueKind.String
                    && doc.RootElement.TryGetProperty("Message", out var m) && m.ValueKind == JsonValueKind.String ? t.GetString() : null;
            }
            catch (JsonException)
            {
                return null;
            }
        }
    }
}
