import { useState } from 'preact/hooks';
import { ApiError } from '../api';
import { ErrorBox } from '../components/ErrorBox';
import { number } from '../format';

type Counts = Record<string, { ReadCount?: number } | undefined>;

/** What an import's answer (RavenDB's SmuggleResult) says it read, as one line. */
function summary(result: Counts): string {
  const names: Record<string, string> = {
    Documents: 'documents', RevisionDocuments: 'revisions', Attachments: 'attachments', TimeSeries: 'time-series entries',
    CompareExchange: 'compare-exchange values', Indexes: 'indexes',
  };
  const parts = Object.entries(names)
    .map(([k, name]) => [name, result[k]?.ReadCount ?? 0] as const)
    .filter(([, n]) => n > 0)
    .map(([name, n]) => `${number(n)} ${name}`);
  return 'Imported ' + (parts.length ? parts.join(', ') : 'nothing (the dump was empty)') + '.';
}

/**
 * Export to a .ravendbdump and import one. Both stream: the export is a form post the browser saves to disk as the
 * server writes it, and the import sends the file straight from disk (the browser reads it as it uploads), so a dump of
 * any size passes through without being held in the page's memory.
 */
export function ImportExport({ db }: { db: string }) {
  const [file, setFile] = useState<File | null>(null);
  const [sent, setSent] = useState<number | null>(null); // the upload's fraction; 1 while the server imports
  const [done, setDone] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const url = `/databases/${encodeURIComponent(db)}/smuggler`;

  function upload() {
    if (!file || sent !== null) return;
    setError(null);
    setDone(null);
    setSent(0);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `${url}/import`);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) setSent(e.loaded / e.total); };
    xhr.upload.onload = () => setSent(1);
    xhr.onload = () => {
      setSent(null);
      let body: { Message?: string; Type?: string } & Counts = {};
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // not JSON: the status says it
      }
      if (xhr.status >= 200 && xhr.status < 300) setDone(summary(body));
      else setError(new ApiError(String(body.Message ?? (xhr.responseText || xhr.statusText)), xhr.status, body.Type));
    };
    xhr.onerror = () => {
      setSent(null);
      setError(new ApiError('The server is not reachable. Is it running?', 0));
    };
    xhr.send(file);
  }

  return (
    <div class="panel" style={{ marginTop: '12px' }}>
      <h2 style={{ marginTop: 0 }}>Import and export</h2>
      <form method="post" action={`${url}/export`} class="toolbar">
        <button type="submit" class="primary">Export to a .ravendbdump</button>
        <span class="muted">Every document, attachment, counter, time series, revision, compare-exchange value and index, from one snapshot.</span>
      </form>
      <div class="form-row" style={{ marginTop: '12px' }}>
        <label for="import-file">Import a .ravendbdump</label>
        <div class="toolbar">
          <input id="import-file" type="file" accept=".ravendbdump,application/octet-stream" onChange={(e) => { setFile((e.target as HTMLInputElement).files?.[0] ?? null); setDone(null); setError(null); }} />
          <button class="primary" onClick={upload} disabled={!file || sent !== null}>{sent === null ? 'Import' : sent < 1 ? 'Uploading…' : 'Importing…'}</button>
        </div>
      </div>
      {sent !== null && (
        <div class="progress" role="progressbar" aria-label="Import upload" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(sent * 100)} style={{ marginTop: '8px' }}>
          <div style={{ width: `${Math.round(sent * 100)}%` }} />
        </div>
      )}
      {file && sent === null && !done && !error && <p class="muted">{file.name}: {number(file.size)} bytes.</p>}
      {done && <div class="notice" role="status">{done}</div>}
      <ErrorBox error={error} context="The import did not complete" />
    </div>
  );
}
