using System.IO.Compression;
using System.IO.Pipelines;
using System.Net;

namespace RavenLite.Client.BulkInsert;

/// <summary>A chunked request body fed from a pipe while the request is in flight (optionally gzip).</summary>
internal sealed class PipeContent : HttpContent
{
    private readonly PipeReader _reader;
    private readonly bool _gzip;

    public PipeContent(PipeReader reader, bool gzip)
    {
        _reader = reader;
        _gzip = gzip;
        Headers.ContentType = new System.Net.Http.Headers.MediaTypeHeaderValue("application/json");
        if (gzip)
            Headers.ContentEncoding.Add("gzip");
    }

    protected override async Task SerializeToStreamAsync(Stream stream, TransportContext? context)
    {
        Stream target = _gzip ? new GZipStream(stream, CompressionLevel.Fastest, leaveOpen: true) : stream;
        try
        {
            while (true)
            {
                var read = await _reader.ReadAsync().ConfigureAwait(false);
                foreach (var segment in read.Buffer)
                    await target.WriteAsync(segment).ConfigureAwait(false);
                _reader.AdvanceTo(read.Buffer.End);
                if (read.IsCompleted)
                    break;
                await target.FlushAsync().ConfigureAwait(false);
            }
            if (_gzip)
                await target.DisposeAsync().ConfigureAwait(false);
            await _reader.CompleteAsync().ConfigureAwait(false);
        }
        catch (Exception e)
        {
            await _reader.CompleteAsync(e).ConfigureAwait(false);
            throw;
        }
    }

    protected override bool TryComputeLength(out long length)
    {
        length = 0;
        return false;
    }
}
