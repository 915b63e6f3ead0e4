import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox } from '../components/ErrorBox';

/** Database tasks. Import, export and patch by query come with the server's support for them. */
export function Tasks({ db }: { db: string }) {
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState('');
  const [error, setError] = useState<unknown>(null);
  async function sample() {
    setBusy(true);
    setError(null);
    try {
      await api.sampleData(db);
      setDone('Sample data created.');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }
  return (
    <section>
      <h1>Tasks <span class="muted">· {db}</span></h1>
      <div class="panel">
        <h2 style={{ marginTop: 0 }}>Create sample data</h2>
        <p>Fills an empty database with a Northwind-like set of orders, companies, products and employees.</p>
        <button class="primary" onClick={sample} disabled={busy}>{busy ? 'Creating…' : 'Create sample data'}</button>
        {busy && <div class="progress" role="progressbar" aria-label="Creating sample data" style={{ marginTop: '8px' }}><div style={{ width: '100%' }} /></div>}
        {done && <div class="notice" role="status">{done}</div>}
        <ErrorBox error={error} />
      </div>
      <div class="panel" style={{ marginTop: '12px' }}>
        <h2 style={{ marginTop: 0 }}>Import, export, patch by query</h2>
        <p class="muted">The server does not support <code>.ravendbdump</code> import and export or patch by query yet; these tasks appear here when it does.</p>
      </div>
    </section>
  );
}
