import { useEffect, useRef, useState } from 'preact/hooks';
import { api, parseParameters, type EtlTask, type OperationState, type ReplicationTask } from '../api';
import { Editor } from '../components/Editor';
import { usePolled } from '../hooks/usePolled';
import { actOn } from '../hooks/actOn';
import { ErrorBox } from '../components/ErrorBox';
import { confirmAction } from '../components/Confirm';
import { number } from '../format';
import { ImportExport } from './ImportExport';
import { Subscriptions } from './Subscriptions';
import { DatabaseSettings } from './DatabaseSettings';
import { Backups } from './Backups';

type Kind = 'patch' | 'delete';

/** A running operation by query: polled every 300 ms, shown as a progress bar, cancellable. */
function Operation({ db, id, kind }: { db: string; id: number; kind: Kind }) {
  const [state, setState] = useState<OperationState | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let stopped = false;
    const poll = async () => {
      try {
        const s = await api.operationState(db, id);
        if (stopped) return;
        setState(s);
        if (s.Status !== 'InProgress') return;
      } catch (e) {
        if (!stopped) setError(e);
      }
      if (!stopped) setTimeout(poll, 300);
    };
    poll();
    return () => { stopped = true; };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [db, id]);
  const processed = state?.Progress?.Processed ?? state?.Result?.DocumentsProcessed ?? 0;
  const total = state?.Progress?.Total ?? state?.Result?.Total;
  const fraction = total ? Math.min(1, processed / total) : state?.Status === 'Completed' ? 1 : 0;
  const verb = kind === 'patch' ? 'patched' : 'deleted';
  return (
    <div class="panel" style={{ marginTop: '8px' }} aria-label={`Operation ${id}`}>
      <div class="toolbar" style={{ marginBottom: '4px' }}>
        <strong>Operation {id}</strong>
        <span class={'badge ' + (state?.Status === 'Completed' ? 'ok' : state?.Status === 'InProgress' || !state ? 'warn' : 'bad')}>{state?.Status ?? 'starting'}</span>
        <span class="progress" role="progressbar" aria-label={`Operation ${id} progress`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(fraction * 100)} style={{ flex: 1 }}><div style={{ width: `${Math.round(fraction * 100)}%` }} /></span>
        <span role="status">{number(processed)}{total != null ? ` of ${number(total)}` : ''} {verb}</span>
        {state?.Status === 'InProgress' && <button onClick={() => api.killOperation(db, id).catch(setError)}>Cancel</button>}
      </div>
      {state?.Status === 'Completed' && state.Result?.DocumentsSkipped ? <p class="muted">{number(state.Result.DocumentsSkipped)} matching document(s) were left as they were (the script changed nothing, or they were deleted meanwhile).</p> : null}
      {(state?.Status === 'Faulted' || state?.Status === 'Canceled') && <div class="error" role="alert">{state.Result?.Message}</div>}
      <ErrorBox error={error} />
    </div>
  );
}

/**
 * External replication: each task's destination, connection status, error and lag (polled every second), the
 * documents in conflict, a form that adds a task (a Raven connection string, then the task), and enable, disable and
 * delete (asking first).
 */
function Replication({ db }: { db: string }) {
  const [tasks, setTasks] = useState<ReplicationTask[] | null>(null);
  const [conflicts, setConflicts] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [url, setUrl] = useState(location.origin);
  const [destination, setDestination] = useState('');
  const [delay, setDelay] = useState('00:00:00');
  const refresh = usePolled(async (signal) => {
    const [t, c] = await Promise.all([api.replicationTasks(db, signal), api.replicationConflicts(db, signal)]);
    setTasks(t.OngoingTasks.filter((x) => (x as { TaskType?: string }).TaskType === 'Replication'));
    setConflicts(c.TotalResults);
  }, db, setError);
  async function add(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      await api.addReplication(db, url.trim().replace(/\/$/, ''), destination.trim(), delay.trim());
      setDestination('');
      refresh();
    } catch (err) {
      setError(err);
    }
  }
  async function remove(t: ReplicationTask) {
    if (!(await confirmAction({ title: 'Delete replication task?', message: `"${t.TaskName}" stops sending to ${t.DestinationDatabase}. What was sent stays there.`, confirm: 'Delete', danger: true }))) return;
    try {
      await api.deleteReplication(db, t.TaskId);
      refresh();
    } catch (err) {
      setError(err);
    }
  }
  async function toggle(t: ReplicationTask) {
    try {
      await api.toggleReplication(db, t.TaskId, t.TaskState === 'Enabled');
      refresh();
    } catch (err) {
      setError(err);
    }
  }
  return (
    <div class="panel" style={{ marginTop: '12px' }}>
      <h2 style={{ marginTop: 0 }}>Replication</h2>
      {tasks && tasks.length === 0 && <p class="muted">This database replicates nowhere yet.</p>}
      {tasks && tasks.length > 0 && (
        <table class="data" aria-label="Replication tasks">
          <thead><tr><th>Task</th><th>Destination</th><th>Status</th><th>Acknowledged etag</th><th>Lag</th><th>Actions</th></tr></thead>
          <tbody>
            {tasks.map((t) => (
              <tr key={t.TaskId}>
                <td>{t.TaskName}</td>
                <td>{t.DestinationDatabase} <span class="muted">at {t.TopologyDiscoveryUrls.join(', ')}</span>{t.DelayReplicationFor !== '00:00:00' && <span class="muted"> (delayed {t.DelayReplicationFor})</span>}</td>
                <td>
                  <span class={'badge ' + (t.TaskState === 'Disabled' ? 'warn' : t.TaskConnectionStatus === 'Active' ? 'ok' : 'bad')}>{t.TaskState === 'Disabled' ? 'Disabled' : t.TaskConnectionStatus}</span>
                  {t.Error && <div class="error" role="alert">{t.Error}</div>}
                </td>
                <td>{number(t.LastAcknowledgedEtag)} of {number(t.LastDatabaseEtag)}</td>
                <td role="status" aria-label={`Lag of ${t.TaskName}`}>{number(t.EtagLag)} etags{t.EtagLag > 0 ? `, ${number(Math.round(t.TimeLagMs))} ms` : ''}</td>
                <td>
                  <button onClick={() => toggle(t)}>{t.TaskState === 'Enabled' ? 'Disable' : 'Enable'}</button>{' '}
                  <button class="danger" onClick={() => remove(t)}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {conflicts != null && conflicts > 0 && <div class="notice" role="status">{number(conflicts)} document(s) in conflict: a load answers 409 until a save resolves it.</div>}
      <form onSubmit={add} class="toolbar" style={{ marginTop: '8px', flexWrap: 'wrap' }} aria-label="Add replication">
        <label>Destination server <input value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} required aria-label="Destination server URL" /></label>
        <label>Database <input value={destination} onInput={(e) => setDestination((e.target as HTMLInputElement).value)} required aria-label="Destination database" /></label>
        <label>Delay <input value={delay} onInput={(e) => setDelay((e.target as HTMLInputElement).value)} size={8} aria-label="Delay (hh:mm:ss)" /></label>
        <button class="primary" type="submit">Add replication</button>
      </form>
      <ErrorBox error={error} context="Replication" />
    </div>
  );
}

/**
 * ETL tasks (RavenDB ETL and SQL ETL): each task's destination and status, and per transformation its state, last
 * loaded etag, lag, documents loaded and error (polled every second); enable, disable, reset (loads everything again)
 * and delete, asking first. Tasks are added with a client's AddEtlOperation (PUT /admin/etl).
 */
function Etl({ db }: { db: string }) {
  const [tasks, setTasks] = useState<EtlTask[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const refresh = usePolled(async (signal) => setTasks(await api.etlTasks(db, signal)), db, setError);
  const act = actOn(refresh, setError);
  async function remove(t: EtlTask) {
    if (await confirmAction({ title: 'Delete ETL task?', message: `"${t.TaskName}" stops loading into ${t.DestinationDatabase ?? t.ConnectionStringName}. What it loaded stays there.`, confirm: 'Delete', danger: true }))
      await act(() => api.deleteEtl(db, t));
  }
  async function reset(t: EtlTask, transformation: string) {
    if (await confirmAction({ title: 'Reset ETL?', message: `Transformation "${transformation}" of "${t.TaskName}" loads every document of its collections again, from the start.`, confirm: 'Reset' }))
      await act(() => api.resetEtl(db, t, transformation));
  }
  const destination = (t: EtlTask) => t.TaskType === 'SqlEtl'
    ? `${t.DestinationDatabase ?? '?'} on ${t.DestinationServer ?? '?'}`
    : `${t.DestinationDatabase ?? '?'} at ${t.DestinationUrl ?? '?'}`;
  return (
    <div class="panel" style={{ marginTop: '12px' }}>
      <h2 style={{ marginTop: 0 }}>ETL</h2>
      {tasks && tasks.length === 0 && <p class="muted">No ETL tasks. A client's AddEtlOperation (RavenDB ETL or SQL ETL to PostgreSQL) adds one.</p>}
      {tasks && tasks.length > 0 && (
        <table class="data" aria-label="ETL tasks">
          <thead><tr><th>Task</th><th>Destination</th><th>Status</th><th>Transformation</th><th>Last etag</th><th>Lag</th><th>Loaded</th><th>Actions</th></tr></thead>
          <tbody>
            {tasks.flatMap((t) => t.Transformations.map((x, i) => (
              <tr key={`${t.TaskId}/${x.Name}`}>
                {i === 0 && <td rowSpan={t.Transformations.length}>{t.TaskName} <span class="badge">{t.TaskType === 'SqlEtl' ? 'SQL' : 'RavenDB'}</span></td>}
                {i === 0 && <td rowSpan={t.Transformations.length}>{destination(t)} <span class="muted">({t.ConnectionStringName})</span></td>}
                {i === 0 && (
                  <td rowSpan={t.Transformations.length}>
                    <span class={'badge ' + (t.TaskState === 'Disabled' ? 'warn' : t.TaskConnectionStatus === 'Active' ? 'ok' : 'bad')} role="status" aria-label={`Status of ${t.TaskName}`}>{t.TaskState === 'Disabled' ? 'Disabled' : t.TaskConnectionStatus}</span>
                  </td>
                )}
                <td>
                  {x.Name} <span class="muted">{x.State}</span>
                  {x.Error && <div class="error" role="alert" aria-label={`Error of ${x.Name}`}>{x.Error}</div>}
                </td>
                <td>{x.LastProcessedEtag != null ? number(x.LastProcessedEtag) : '–'}</td>
                <td role="status" aria-label={`Lag of ${x.Name}`}>{x.EtagLag != null ? `${number(x.EtagLag)} etags${x.EtagLag > 0 ? `, ${number(Math.round(x.TimeLagMs ?? 0))} ms` : ''}` : '–'}</td>
                <td>{x.Loaded != null ? number(x.Loaded) : '–'}{x.FailedBatches ? <span class="muted"> ({number(x.FailedBatches)} failed batches)</span> : null}</td>
                <td>
                  {i === 0 && <><button onClick={() => act(() => api.toggleEtl(db, t, t.TaskState !== 'Disabled'))}>{t.TaskState === 'Disabled' ? 'Enable' : 'Disable'}</button>{' '}</>}
                  <button onClick={() => reset(t, x.Name)} aria-label={`Reset ${x.Name}`}>Reset</button>{' '}
                  {i === 0 && <button class="danger" onClick={() => remove(t)}>Delete</button>}
                </td>
              </tr>
            )))}
          </tbody>
        </table>
      )}
      <ErrorBox error={error} context="ETL" />
    </div>
  );
}

/** Patch and delete by query (long-running operations with progress), sample data, replication and ETL. Import and export come with the server's support. */
export function Tasks({ db }: { db: string }) {
  const [kind, setKind] = useState<Kind>('patch');
  const [query, setQuery] = useState('from Orders where Freight > 100\nupdate {\n    this.Freight = this.Freight * 1.1;\n}');
  const [parameters, setParameters] = useState('{}');
  // What the editors hold now (a click right after typing may come before the next render).
  const latest = useRef({ query, parameters, kind });
  latest.current = { ...latest.current, kind };
  const [running, setRunning] = useState<{ id: number; kind: Kind }[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [sampleBusy, setSampleBusy] = useState(false);
  const [sampleDone, setSampleDone] = useState('');
  const [sampleError, setSampleError] = useState<unknown>(null);

  const setText = (q: string) => { latest.current.query = q; setQuery(q); };

  async function start() {
    const { query, parameters, kind } = latest.current;
    const params = parseParameters(parameters);
    if (params instanceof Error) {
      setError(params);
      return;
    }
    setError(null);
    const asked = kind === 'delete'
      ? await confirmAction({ title: 'Delete by query?', message: `Every document that "${query.trim()}" matches is deleted.`, confirm: 'Delete', danger: true })
      : await confirmAction({ title: 'Patch by query?', message: `The update script runs on every document that "${query.replace(/\s*update\s*\{[\s\S]*$/, '').trim()}" matches and saves the ones it changes.`, confirm: 'Patch', danger: true });
    if (!asked) return;
    try {
      const r = kind === 'patch' ? await api.patchByQuery(db, query, params) : await api.deleteByQuery(db, query, params);
      setRunning((ops) => [{ id: r.OperationId, kind }, ...ops]);
    } catch (e) {
      setError(e);
    }
  }

  async function sample() {
    setSampleBusy(true);
    setSampleError(null);
    try {
      await api.sampleData(db);
      setSampleDone('Sample data created.');
    } catch (e) {
      setSampleError(e);
    } finally {
      setSampleBusy(false);
    }
  }

  return (
    <section>
      <h1>Tasks <span class="muted">· {db}</span></h1>
      <div class="panel">
        <h2 style={{ marginTop: 0 }}>Patch or delete by query</h2>
        <div class="toolbar" role="radiogroup" aria-label="Operation">
          <label><input type="radio" name="op-kind" checked={kind === 'patch'} onChange={() => { setKind('patch'); const q = latest.current.query; if (!/update\s*\{/.test(q)) setText(q.trim() + '\nupdate {\n    \n}'); }} /> Patch (<code>update {'{ ... }'}</code> runs on each match)</label>
          <label><input type="radio" name="op-kind" checked={kind === 'delete'} onChange={() => { setKind('delete'); setText(latest.current.query.replace(/\s*update\s*\{[\s\S]*\}\s*$/, '')); }} /> Delete the matches</label>
        </div>
        <div class="form-row">
          <label for="op-query">Query</label>
          <Editor id="op-query" language="rql" label="Operation query" value={query} onChange={setText} onRun={start} minHeight="110px" />
        </div>
        <details>
          <summary>Query parameters</summary>
          <Editor language="json" label="Operation query parameters (JSON)" value={parameters} onChange={(v) => { latest.current.parameters = v; setParameters(v); }} minHeight="50px" />
        </details>
        <div class="toolbar" style={{ marginTop: '8px' }}>
          <button class={kind === 'delete' ? 'danger' : 'primary'} onClick={start}>{kind === 'patch' ? 'Run patch' : 'Delete matching documents'}</button>
        </div>
        <ErrorBox error={error} context="The operation did not start" />
        {running.map((o) => <Operation key={o.id} db={db} id={o.id} kind={o.kind} />)}
      </div>
      <div class="panel" style={{ marginTop: '12px' }}>
        <h2 style={{ marginTop: 0 }}>Create sample data</h2>
        <p>Fills an empty database with a Northwind-like set of orders, companies, products and employees.</p>
        <button class="primary" onClick={sample} disabled={sampleBusy}>{sampleBusy ? 'Creating…' : 'Create sample data'}</button>
        {sampleBusy && <div class="progress" role="progressbar" aria-label="Creating sample data" style={{ marginTop: '8px' }}><div style={{ width: '100%' }} /></div>}
        {sampleDone && <div class="notice" role="status">{sampleDone}</div>}
        <ErrorBox error={sampleError} />
      </div>
      <Replication db={db} />
      <Etl db={db} />
      <Subscriptions db={db} />
      <ImportExport db={db} />
      <Backups db={db} />
      <DatabaseSettings db={db} />
    </section>
  );
}
