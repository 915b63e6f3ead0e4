import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { api } from '../api';
import { ErrorBox } from '../components/ErrorBox';
import { Grid, documentColumns, type Column } from '../components/Grid';
import { confirmAction } from '../components/Confirm';
import { dbPath, number } from '../format';

const PageSize = 100;
type Doc = Record<string, unknown>;

const idOf = (d: Doc) => String((d['@metadata'] as Doc | undefined)?.['@id'] ?? '');

export function Documents({ db, collection }: { db: string; collection?: string }) {
  const [, navigate] = useLocation();
  const [counts, setCounts] = useState<{ total: number; collections: [string, number][] } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [version, setVersion] = useState(0); // bumps after a change: the pages are fetched again
  const pages = useRef(new Map<number, Doc[] | 'loading'>());
  const [, setLoaded] = useState(0);
  const [columns, setColumns] = useState<Column<Doc>[]>([]);
  const [selected, setSelected] = useState(new Set<number>());
  const [busy, setBusy] = useState('');

  useEffect(() => {
    api.collections(db).then((c) => {
      setCounts({ total: c.CountOfDocuments, collections: Object.entries(c.Collections).sort((a, b) => a[0].localeCompare(b[0])) });
      setError(null);
    }, setError);
  }, [db, version]);

  useEffect(() => {
    pages.current = new Map();
    setColumns([]);
    setSelected(new Set());
    setLoaded((n) => n + 1);
  }, [db, collection, version]);

  const count = collection ? (counts?.collections.find(([c]) => c.toLowerCase() === collection.toLowerCase())?.[1] ?? 0) : (counts?.total ?? 0);

  const fetchPage = useCallback((page: number) => {
    if (pages.current.has(page)) return;
    pages.current.set(page, 'loading');
    const start = page * PageSize;
    const request = collection ? api.collectionPage(db, collection, start, PageSize) : api.allDocsPage(db, start, PageSize);
    const mine = pages.current;
    request.then((r) => {
      if (pages.current !== mine) return;
      mine.set(page, r.Results);
      setColumns((c) => (c.length ? c : documentColumns(r.Results)));
      setLoaded((n) => n + 1);
    }, (e) => {
      mine.delete(page);
      setError(e);
    });
  }, [db, collection]);

  const row = (i: number) => {
    const page = pages.current.get(Math.floor(i / PageSize));
    return Array.isArray(page) ? page[i % PageSize] : undefined;
  };
  const onRange = (first: number, last: number) => {
    for (let p = Math.floor(first / PageSize); p <= Math.floor(last / PageSize); p++) if (!pages.current.has(p)) queueMicrotask(() => fetchPage(p));
  };

  async function deleteSelected() {
    const ids = [...selected].map(row).filter((d): d is Doc => !!d).map(idOf);
    if (ids.length === 0) return;
    const ok = await confirmAction({ title: `Delete ${ids.length} document${ids.length > 1 ? 's' : ''}?`, message: ids.length <= 5 ? `Deletes ${ids.join(', ')}.` : `Deletes ${ids.slice(0, 5).join(', ')} and ${ids.length - 5} more.`, confirm: 'Delete', danger: true });
    if (!ok) return;
    setBusy(`Deleting ${ids.length}…`);
    try {
      for (let i = 0; i < ids.length; i += 500) await api.deleteDocuments(db, ids.slice(i, i + 500));
      setVersion((v) => v + 1);
    } catch (e) {
      setError(e);
    } finally {
      setBusy('');
    }
  }

  const base = dbPath(db, '/documents');
  return (
    <section>
      <h1>Documents <span class="muted">· {db}</span></h1>
      <ErrorBox error={error} />
      <div class="split">
        <nav class="collections panel" aria-label="Collections">
          <Link href={base} aria-current={!collection ? 'page' : undefined}><span>All documents</span><span class="muted">{number(counts?.total)}</span></Link>
          {counts?.collections.map(([c, n]) => (
            <Link key={c} href={`${base}/${encodeURIComponent(c)}`} aria-current={collection?.toLowerCase() === c.toLowerCase() ? 'page' : undefined}>
              <span>{c}</span><span class="muted">{number(n)}</span>
            </Link>
          ))}
        </nav>
        <div>
          <div class="toolbar">
            <Link class="button primary" href={dbPath(db, `/edit${collection ? `?collection=${encodeURIComponent(collection)}` : ''}`)}>New document</Link>
            <button class="danger" disabled={selected.size === 0 || !!busy} onClick={deleteSelected}>Delete selected ({selected.size})</button>
            <span class="grow" />
            {busy && <span role="status">{busy}</span>}
            <span class="muted" aria-live="polite">{number(count)} document{count === 1 ? '' : 's'}{collection ? ` in ${collection}` : ''}</span>
          </div>
          <Grid<Doc>
            label={collection ? `Documents of ${collection}` : 'All documents'}
            count={count}
            row={row}
            columns={columns.length ? columns : documentColumns([])}
            onRange={onRange}
            onOpen={(d) => navigate(dbPath(db, `/edit?id=${encodeURIComponent(idOf(d))}`))}
            selected={selected}
            onToggle={(i) => setSelected((s) => { const n = new Set(s); if (n.has(i)) n.delete(i); else n.add(i); return n; })}
            onToggleAll={() => setSelected((s) => {
              if (s.size > 0) return new Set();
              const all = new Set<number>();
              for (const [p, rows] of pages.current) if (Array.isArray(rows)) rows.forEach((_, k) => all.add(p * PageSize + k));
              return all;
            })}
          />
          <p class="muted">Double-click a row or press Enter to open it; Space selects.</p>
        </div>
      </div>
    </section>
  );
}
