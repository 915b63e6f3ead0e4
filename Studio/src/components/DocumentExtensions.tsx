import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox } from './ErrorBox';
import { confirmAction } from './Confirm';

type Attachment = { Name: string; Hash: string; ContentType: string; Size: number };

function bytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KB` : `${(n / (1 << 20)).toFixed(1)} MB`;
}

/**
 * A stored document's extensions, read from the server each time the document changes: its attachments (download,
 * upload, delete), counters (values; increment one), time series (entry counts and time spans) and how many
 * revisions it has. Every change is a request of its own; the document is read again afterwards (`onChanged`).
 */
export function DocumentExtensions({ db, id, metadata, onChanged }: { db: string; id: string; metadata: Record<string, unknown>; onChanged: () => void }) {
  const [counters, setCounters] = useState<{ CounterName: string; TotalValue: number }[]>([]);
  const [series, setSeries] = useState<{ Name: string; NumberOfEntries: number; StartDate: string; EndDate: string }[]>([]);
  const [revisions, setRevisions] = useState(0);
  const [counterName, setCounterName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [version, setVersion] = useState(0); // bumped after each change: an increment leaves the document as it is
  const attachments = (metadata['@attachments'] as Attachment[] | undefined) ?? [];
  const changeVector = String(metadata['@change-vector'] ?? '');

  useEffect(() => {
    let live = true;
    Promise.all([api.counters(db, id), api.timeSeriesStats(db, id), api.revisionsCount(db, id)]).then(([c, t, r]) => {
      if (!live) return;
      setCounters(c.Counters.filter((x): x is { CounterName: string; TotalValue: number } => x !== null));
      setSeries(t.TimeSeries);
      setRevisions(r.RevisionsCount);
    }, (e) => live && setError(e));
    return () => { live = false; };
  }, [db, id, changeVector, version]);

  async function run(action: () => Promise<unknown>) {
    setBusy(true);
    setError(null);
    try {
      await action();
      setVersion((v) => v + 1);
      onChanged();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }

  async function upload(files: FileList | null) {
    const file = files?.[0];
    if (file) await run(() => api.putAttachment(db, id, file.name, file));
  }

  async function remove(name: string) {
    if (await confirmAction({ title: `Delete attachment ${name}?`, message: `The attachment '${name}' of '${id}' is deleted.`, confirm: 'Delete', danger: true }))
      await run(() => api.deleteAttachment(db, id, name));
  }

  return (
    <div aria-label="Extensions">
      <ErrorBox error={error} />
      <h3>Attachments</h3>
      {attachments.length === 0 && <p class="muted">None.</p>}
      <ul class="plain" aria-label="Attachments">
        {attachments.map((a) => (
          <li key={a.Name}>
            <a href={api.attachmentUrl(db, id, a.Name)} download={a.Name}>{a.Name}</a> <span class="muted">{bytes(a.Size)} · {a.ContentType || 'no type'}</span>{' '}
            <button class="small danger" disabled={busy} onClick={() => remove(a.Name)} aria-label={`Delete attachment ${a.Name}`}>✕</button>
          </li>
        ))}
      </ul>
      <label class="muted" for="attach-file">Add an attachment</label>
      <input id="attach-file" type="file" disabled={busy} onChange={(e) => upload((e.target as HTMLInputElement).files)} />
      <h3>Counters</h3>
      {counters.length === 0 && <p class="muted">None.</p>}
      <ul class="plain mono" aria-label="Counters">
        {counters.map((c) => (
          <li key={c.CounterName}>
            {c.CounterName} = {c.TotalValue}{' '}
            <button class="small" disabled={busy} onClick={() => run(() => api.incrementCounter(db, id, c.CounterName, 1))} aria-label={`Increment ${c.CounterName}`}>+1</button>
          </li>
        ))}
      </ul>
      <form class="inline" onSubmit={(e) => { e.preventDefault(); if (counterName.trim()) run(() => api.incrementCounter(db, id, counterName.trim(), 1)).then(() => setCounterName('')); }}>
        <label for="counter-name" class="muted">New counter</label>
        <input id="counter-name" value={counterName} onInput={(e) => setCounterName((e.target as HTMLInputElement).value)} />
        <button class="small" disabled={busy || !counterName.trim()}>Add</button>
      </form>
      <h3>Time series</h3>
      {series.length === 0 && <p class="muted">None.</p>}
      <ul class="plain" aria-label="Time series">
        {series.map((t) => (
          <li key={t.Name}><span class="mono">{t.Name}</span> <span class="muted">{t.NumberOfEntries.toLocaleString()} entries, {t.StartDate.slice(0, 19)} … {t.EndDate.slice(0, 19)}</span></li>
        ))}
      </ul>
      <h3>Revisions</h3>
      <p class="muted" aria-label="Revisions">{revisions === 0 ? 'None.' : `${revisions} revision${revisions === 1 ? '' : 's'}.`}</p>
    </div>
  );
}
