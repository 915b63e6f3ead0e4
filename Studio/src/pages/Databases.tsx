import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, DatabasesChanged, type DatabaseStats } from '../api';
import { ErrorBox } from '../components/ErrorBox';
import { confirmAction } from '../components/Confirm';
import { bytes, dbPath, number } from '../format';

interface Row { name: string; stats?: DatabaseStats; errors?: number; error?: unknown }

export function Databases() {
  const [rows, setRows] = useState<Row[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [name, setName] = useState('');
  const [sample, setSample] = useState(false);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState('');

  async function load() {
    window.dispatchEvent(new Event(DatabasesChanged));
    try {
      const list = await api.databases();
      const result = await Promise.all(list.Databases.map(async (d): Promise<Row> => {
        try {
          const [stats, errors] = await Promise.all([api.stats(d.Name), api.indexErrors(d.Name)]);
          return { name: d.Name, stats, errors: errors.Results.reduce((s, i) => s + i.Errors.length, 0) };
        } catch (e) {
          return { name: d.Name, error: e };
        }
      }));
      setRows(result);
      setError(null);
    } catch (e) {
      setError(e);
    }
  }
  useEffect(() => { load(); }, []);

  async function create(e: Event) {
    e.preventDefault();
    if (!name.trim()) return;
    setBusy(true);
    setError(null);
    try {
      await api.createDatabase(name.trim());
      if (sample) await api.sampleData(name.trim());
      setNotice(`Database '${name.trim()}' created${sample ? ' with sample data' : ''}.`);
      setName('');
      await load();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  async function remove(db: string) {
    const ok = await confirmAction({ title: `Delete database '${db}'?`, message: `Every document and index of '${db}' is deleted from disk. This cannot be undone.`, confirm: `Delete ${db}`, danger: true, typeToConfirm: db });
    if (!ok) return;
    try {
      await api.deleteDatabase(db);
      setNotice(`Database '${db}' deleted.`);
      await load();
    } catch (err) {
      setError(err);
    }
  }

  return (
    <section>
      <h1>Databases</h1>
      <form class="toolbar panel" onSubmit={create} aria-label="Create a database">
        <label for="new-db">New database</label>
        <input id="new-db" value={name} placeholder="name" onInput={(e) => setName((e.target as HTMLInputElement).value)} pattern="[A-Za-z0-9_.\-]+" title="letters, digits, '_', '.', '-'" />
        <label><input type="checkbox" checked={sample} onChange={(e) => setSample((e.target as HTMLInputElement).checked)} /> with sample data</label>
        <button class="primary" type="submit" disabled={busy || !name.trim()}>{busy ? 'Creating…' : 'Create'}</button>
      </form>
      {notice && <div class="notice" role="status">{notice}</div>}
      <ErrorBox error={error} />
      {rows === null && !error && <p class="muted">Loading…</p>}
      {rows && rows.length === 0 && <p>No databases yet: create one above.</p>}
      {rows && rows.length > 0 && (
        <table class="data">
          <thead>
            <tr><th>Name</th><th class="num">Documents</th><th class="num">Size on disk</th><th class="num">Indexes</th><th class="num">Index errors</th><th><span class="visually-hidden">Actions</span></th></tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.name}>
                <td><Link href={dbPath(r.name, '/documents')}>{r.name}</Link></td>
                {r.error ? <td colSpan={4}><ErrorBox error={r.error} /></td> : (
                  <>
                    <td class="num">{number(r.stats?.CountOfDocuments)}</td>
                    <td class="num">{bytes(r.stats?.SizeOnDisk.SizeInBytes)}</td>
                    <td class="num">{number(r.stats?.CountOfIndexes)}</td>
                    <td class="num">{r.errors ? <span class="badge bad">{number(r.errors)}</span> : '0'}</td>
                  </>
                )}
                <td><button class="danger" onClick={() => remove(r.name)} aria-label={`Delete database ${r.name}`}>Delete</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
