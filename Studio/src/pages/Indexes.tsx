import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api, type IndexStats } from '../api';
import { ErrorBox } from '../components/ErrorBox';
import { confirmAction } from '../components/Confirm';
import { dbPath, number } from '../format';

interface IndexErrors { Name: string; Errors: { Document: string | null; Error: string; Timestamp: string }[] }

/** Build progress of an index: processed etags over the etags to process, per collection summed. */
function progress(s: IndexStats): number {
  let done = 0;
  let all = 0;
  for (const c of Object.values(s.Collections ?? {})) {
    done += c.LastProcessedDocumentEtag;
    all += c.LastProcessedDocumentEtag + c.DocumentLag;
  }
  return all === 0 ? 1 : done / all;
}

/** Every index with its state, entries, staleness (a progress bar while it builds) and errors by document; edit, reset, delete. */
export function Indexes({ db }: { db: string }) {
  const [stats, setStats] = useState<IndexStats[] | null>(null);
  const [errors, setErrors] = useState<IndexErrors[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [notice, setNotice] = useState('');

  async function load() {
    try {
      const [s, e] = await Promise.all([api.indexStats(db), api.indexErrors(db)]);
      setStats(s.Results);
      setErrors(e.Results);
      setError(null);
    } catch (e) {
      setError(e);
    }
  }
  useEffect(() => {
    load();
    const timer = setInterval(() => { if (document.visibilityState === 'visible') load(); }, 1000);
    return () => clearInterval(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [db]);

  async function reset(name: string) {
    if (!(await confirmAction({ title: `Reset ${name}?`, message: `Everything '${name}' indexed is thrown away and it is built again from the documents.`, confirm: 'Reset', danger: true }))) return;
    try {
      await api.resetIndex(db, name);
      setNotice(`${name} is being rebuilt.`);
      load();
    } catch (e) {
      setError(e);
    }
  }

  async function remove(name: string) {
    if (!(await confirmAction({ title: `Delete ${name}?`, message: `The index '${name}' and its files are deleted. Queries that name it fail until it is created again.`, confirm: 'Delete', danger: true }))) return;
    try {
      await api.deleteIndex(db, name);
      setNotice(`${name} deleted.`);
      load();
    } catch (e) {
      setError(e);
    }
  }

  return (
    <section>
      <h1>Indexes <span class="muted">· {db}</span></h1>
      <div class="toolbar">
        <Link class="button primary" href={dbPath(db, '/indexes/edit')}>New index</Link>
        <span class="grow" />
        {notice && <span class="badge ok" role="status">{notice}</span>}
      </div>
      <ErrorBox error={error} />
      {stats && stats.length === 0 && <p>No indexes yet. Queries create auto indexes; <Link href={dbPath(db, '/indexes/edit')}>write a static one</Link>.</p>}
      {stats && stats.length > 0 && (
        <table class="data" aria-label="Indexes">
          <thead>
            <tr><th>Name</th><th>Type</th><th>State</th><th class="num">Entries</th><th>Staleness</th><th class="num">Errors</th><th><span class="visually-hidden">Actions</span></th></tr>
          </thead>
          <tbody>
            {stats.map((s) => {
              const p = progress(s);
              const errs = errors.find((e) => e.Name === s.Name)?.Errors ?? [];
              return (
                <Fragment key={s.Name}>
                  <tr data-index={s.Name}>
                    <td class="mono">{s.Type.startsWith('Auto') ? s.Name : <Link href={dbPath(db, `/indexes/edit?name=${encodeURIComponent(s.Name)}`)}>{s.Name}</Link>}</td>
                    <td>{s.Type}</td>
                    <td>{s.State}</td>
                    <td class="num">{number(s.EntriesCount)}</td>
                    <td>
                      {s.IsStale ? (
                        <span style={{ display: 'flex', gap: '8px', alignItems: 'center' }}>
                          <span class="badge warn">stale</span>
                          <span class="progress" role="progressbar" aria-label={`${s.Name} build progress`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(p * 100)}><div style={{ width: `${Math.round(p * 100)}%` }} /></span>
                          <span class="muted">{Math.round(p * 100)}%</span>
                        </span>
                      ) : <span class="badge ok">up to date</span>}
                    </td>
                    <td class="num">{s.ErrorsCount > 0 ? <button onClick={() => setOpen(open === s.Name ? null : s.Name)} aria-expanded={open === s.Name}><span class="badge bad">{number(s.ErrorsCount)}</span></button> : '0'}</td>
                    <td style={{ whiteSpace: 'nowrap' }}>
                      <button onClick={() => reset(s.Name)} aria-label={`Reset ${s.Name}`}>Reset</button>{' '}
                      <button class="danger" onClick={() => remove(s.Name)} aria-label={`Delete ${s.Name}`}>Delete</button>
                    </td>
                  </tr>
                  {open === s.Name && (
                    <tr>
                      <td colSpan={7}>
                        <table class="data" aria-label={`Errors of ${s.Name}`}>
                          <thead><tr><th>Document</th><th>Error</th><th>When</th></tr></thead>
                          <tbody>
                            {errs.map((e, k) => (
                              <tr key={k}>
                                <td class="mono">{e.Document ? <Link href={dbPath(db, `/edit?id=${encodeURIComponent(e.Document)}`)}>{e.Document}</Link> : '–'}</td>
                                <td>{e.Error}</td>
                                <td>{new Date(e.Timestamp).toLocaleString()}</td>
                              </tr>
                            ))}
                          </tbody>
                        </table>
                      </td>
                    </tr>
                  )}
                </Fragment>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
