import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation } from 'wouter-preact';
import { api, parseParameters, type QueryResult } from '../api';
import { Editor } from '../components/Editor';
import { ErrorBox } from '../components/ErrorBox';
import { Grid, documentColumns, preview, type Column } from '../components/Grid';
import { rqlCompletion, type RqlSchema } from '../rql';
import { dbPath, number } from '../format';

const PageSize = 1000;
const RecentKey = 'ravenlite.recentQueries';
type Row = Record<string, unknown>;

interface Recent { db: string; query: string; parameters: string; at: string }

function loadRecent(): Recent[] {
  try {
    return JSON.parse(localStorage.getItem(RecentKey) ?? '[]') as Recent[];
  } catch {
    return [];
  }
}

declare global {
  interface Window { __studioQueryRender?: { rows: number; ms: number } }
}

/** RQL with completion, parameters, results in a virtual grid (fetched 1,000 at a time) or as JSON, and recent queries. */
export function Query({ db }: { db: string }) {
  const [, navigate] = useLocation();
  const [query, setQuery] = useState(() => loadRecent().find((r) => r.db === db)?.query ?? 'from ');
  const [parameters, setParameters] = useState('{}');
  const [result, setResult] = useState<QueryResult | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [running, setRunning] = useState(false);
  const [elapsed, setElapsed] = useState(0);
  const [tab, setTab] = useState<'grid' | 'json'>('grid');
  const [recent, setRecent] = useState(loadRecent);
  const pages = useRef(new Map<number, Row[] | 'loading'>());
  const [, setLoaded] = useState(0);
  const ran = useRef<{ query: string; parameters: unknown } | null>(null);
  const renderStart = useRef(0);
  // What the editors hold now (Ctrl+Enter right after typing may come before the next render).
  const latest = useRef({ query, parameters });
  const schema = useRef<RqlSchema>({ collections: [], indexes: [], fields: () => [] });
  const fieldCache = useRef(new Map<string, string[]>());

  useEffect(() => {
    Promise.all([api.collections(db), api.indexes(db)]).then(([c, i]) => {
      schema.current = {
        collections: Object.keys(c.Collections),
        indexes: i.Results.map((x: { Name: string }) => x.Name),
        fields: (collection) => {
          const key = collection.toLowerCase();
          if (!fieldCache.current.has(key)) {
            fieldCache.current.set(key, []);
            api.collectionPage(db, collection, 0, 5).then((r) => {
              const names = new Set<string>();
              const walk = (o: unknown, prefix: string, depth: number) => {
                if (!o || typeof o !== 'object' || Array.isArray(o) || depth > 2) return;
                for (const [k, v] of Object.entries(o as Row)) {
                  if (k === '@metadata') continue;
                  names.add(prefix + k);
                  walk(v, prefix + k + '.', depth + 1);
                }
              };
              r.Results.forEach((d) => walk(d, '', 0));
              fieldCache.current.set(key, [...names]);
            }, () => undefined);
          }
          return fieldCache.current.get(key) ?? [];
        },
      };
    }, () => undefined);
  }, [db]);

  const completion = useMemo(() => rqlCompletion(() => schema.current), []);

  async function run() {
    const { query, parameters } = latest.current;
    const params = parseParameters(parameters);
    if (params instanceof Error) {
      setError(params);
      return;
    }
    setRunning(true);
    setError(null);
    const started = performance.now();
    try {
      const r = await api.query(db, query, params, 0, PageSize);
      setElapsed(performance.now() - started);
      ran.current = { query, parameters: params };
      pages.current = new Map([[0, r.Results]]);
      renderStart.current = performance.now();
      setResult(r);
      const entry: Recent = { db, query, parameters, at: new Date().toISOString() };
      const next = [entry, ...loadRecent().filter((x) => !(x.db === db && x.query === query))].slice(0, 20);
      localStorage.setItem(RecentKey, JSON.stringify(next));
      setRecent(next);
    } catch (e) {
      setError(e);
      setResult(null);
    } finally {
      setRunning(false);
    }
  }

  useEffect(() => {
    if (result && renderStart.current) {
      // Measured after the grid's rows are in the page (the next frame): what the Studio's render costs.
      requestAnimationFrame(() => {
        window.__studioQueryRender = { rows: result.Results.length, ms: performance.now() - renderStart.current };
        renderStart.current = 0;
      });
    }
  }, [result]);

  const total = result ? Math.max(result.TotalResults, result.Results.length) : 0;
  const row = (i: number) => {
    const page = pages.current.get(Math.floor(i / PageSize));
    return Array.isArray(page) ? page[i % PageSize] : undefined;
  };
  const onRange = (first: number, last: number) => {
    if (!ran.current) return;
    for (let p = Math.floor(first / PageSize); p <= Math.floor(last / PageSize); p++) {
      if (pages.current.has(p)) continue;
      pages.current.set(p, 'loading');
      const mine = pages.current;
      const asked = ran.current;
      api.query(db, asked.query, asked.parameters, p * PageSize, PageSize).then((r) => {
        if (pages.current === mine) { mine.set(p, r.Results); setLoaded((n) => n + 1); }
      }, (e) => { mine.delete(p); setError(e); });
    }
  };
  const columns: Column<Row>[] = useMemo(() => {
    if (!result) return [];
    const rows = result.Results as Row[];
    if (rows.some((r) => (r['@metadata'] as Row | undefined)?.['@id'])) return documentColumns(rows);
    const keys = [...new Set(rows.slice(0, 50).flatMap((r) => Object.keys(r).filter((k) => k !== '@metadata')))].slice(0, 12);
    return keys.map((k) => ({ key: k, label: k, width: 180, render: (r: Row) => preview(r[k]) }));
  }, [result]);

  return (
    <section>
      <h1>Query <span class="muted">· {db}</span></h1>
      <div class="split" style={{ gridTemplateColumns: '1fr 260px' }}>
        <div>
          <div class="form-row">
            <label for="rql">RQL</label>
            <Editor id="rql" language="rql" label="RQL query" value={query} onChange={(v) => { latest.current.query = v; setQuery(v); }} onRun={run} completion={completion} minHeight="110px" placeholder="from Orders where Freight > 10" />
          </div>
          <details>
            <summary>Query parameters</summary>
            <Editor language="json" label="Query parameters (JSON)" value={parameters} onChange={(v) => { latest.current.parameters = v; setParameters(v); }} onRun={run} minHeight="60px" />
          </details>
          <div class="toolbar" style={{ marginTop: '8px' }}>
            <button class="primary" onClick={run} disabled={running}>{running ? 'Running…' : 'Run (Ctrl+Enter)'}</button>
            <span class="grow" />
          </div>
        </div>
        <aside class="panel" aria-label="Recent queries">
          <h2 style={{ marginTop: 0 }}>Recent</h2>
          {recent.filter((r) => r.db === db).length === 0 && <p class="muted">Queries you run are kept here (in this browser).</p>}
          <ul style={{ listStyle: 'none', padding: 0, margin: 0, maxHeight: '220px', overflow: 'auto' }} tabIndex={0} aria-label="Recent queries, scrollable">
            {recent.filter((r) => r.db === db).map((r) => (
              <li key={r.at}><button style={{ width: '100%', justifyContent: 'flex-start', marginBottom: '4px' }} class="mono" title={r.query} onClick={() => { latest.current = { query: r.query, parameters: r.parameters }; setQuery(r.query); setParameters(r.parameters); }}>{r.query.length > 40 ? r.query.slice(0, 40) + '…' : r.query}</button></li>
            ))}
          </ul>
        </aside>
      </div>
      <ErrorBox error={error} context="The query failed" />
      {result && (
        <div>
          <div class="stats-line" role="status" aria-label="Query statistics">
            <span>Index: <strong class="mono">{result.IndexName || '(collection)'}</strong></span>
            <span>{result.IsStale ? <span class="badge warn">stale</span> : <span class="badge ok">not stale</span>}</span>
            <span>Total results: <strong>{number(result.TotalResults)}</strong></span>
            <span>Server: {number(result.DurationInMs)} ms</span>
            <span>Round trip: {elapsed.toFixed(0)} ms</span>
          </div>
          <div class="tabs" role="tablist">
            <button role="tab" aria-selected={tab === 'grid'} onClick={() => setTab('grid')}>Results</button>
            <button role="tab" aria-selected={tab === 'json'} onClick={() => setTab('json')}>JSON</button>
          </div>
          {tab === 'grid' ? (
            <Grid<Row> label="Query results" count={total} row={row} columns={columns} onRange={onRange} height="50vh"
              onOpen={(r) => { const id = (r['@metadata'] as Row | undefined)?.['@id']; if (id) navigate(dbPath(db, `/edit?id=${encodeURIComponent(String(id))}`)); }} />
          ) : (
            <Editor language="json" label="Query results as JSON" value={JSON.stringify((({ Results, Includes, ...rest }) => ({ ...rest, Results: Results.slice(0, 200), Includes }))(result), null, 2)} readOnly minHeight="300px" />
          )}
        </div>
      )}
    </section>
  );
}
