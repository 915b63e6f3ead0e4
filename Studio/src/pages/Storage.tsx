import { useEffect, useRef, useState } from 'preact/hooks';
import { getJson } from '../api';
import { Chart } from '../components/Chart';
import { ErrorBox } from '../components/ErrorBox';
import { bytes, number } from '../format';

interface Layout {
  Database: string;
  PageSize: number;
  Pages: number;
  FreePages: number;
  ReusePendingPages: number;
  JournalPendingPages: number;
  Trees: { Name: string; Depth: number; Entries: number; BranchPages: number; LeafPages: number; OverflowPages: number; FillHistogram: number[] }[];
  PageMap: { PagesPerCell: number; Owners: string[]; Cells: number[] };
  Journal: { TxId: number; Pages: number; RawBytes: number; CompressedBytes: number; Time: string }[];
}

const fixed: Record<string, string> = { free: '#f1f3f7', unused: '#ffffff', 'journal-pending': '#e8590c', 'reuse-pending': '#f59f00', $root: '#212529' };
const palette = ['#2f48b5', '#1b6e3a', '#7048b5', '#0b7285', '#a61e4d', '#5c940d', '#862e9c', '#364fc7', '#087f5b', '#c92a2a', '#1864ab', '#5f3dc4'];
const colorOf = (owners: string[], i: number) => fixed[owners[i]] ?? palette[(i - 4) % palette.length];

function PageMap({ layout }: { layout: Layout }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const { Cells: cells, Owners: owners } = layout.PageMap;
  const columns = 128;
  const size = 7;
  useEffect(() => {
    const c = canvas.current;
    if (!c) return;
    const rows = Math.ceil(cells.length / columns);
    c.width = columns * size;
    c.height = Math.max(size, rows * size);
    const g = c.getContext('2d')!;
    g.fillStyle = '#d9dde5';
    g.fillRect(0, 0, c.width, c.height);
    cells.forEach((owner, i) => {
      g.fillStyle = colorOf(owners, owner);
      g.fillRect((i % columns) * size, Math.floor(i / columns) * size, size - 1, size - 1);
    });
  }, [cells, owners]);
  const used = new Set(cells);
  return (
    <div>
      <canvas ref={canvas} role="img" aria-label={`Map of the data file: ${cells.length} cells of ${layout.PageMap.PagesPerCell} page(s), coloured by owner`} style={{ maxWidth: '100%', imageRendering: 'pixelated', border: '1px solid var(--line)' }} />
      <div class="legend" aria-label="Legend">
        {owners.map((o, i) => (used.has(i) ? <span key={o} style={{ '--c': colorOf(owners, i) } as Record<string, string>}>{o}</span> : null))}
      </div>
    </div>
  );
}

function Fill({ histogram }: { histogram: number[] }) {
  const max = Math.max(1, ...histogram);
  const total = histogram.reduce((a, b) => a + b, 0);
  return (
    <span role="img" title={histogram.map((n, i) => `${i * 10}–${i * 10 + 10}%: ${n}`).join('\n')} aria-label={`Page fill: ${histogram.map((n, i) => `${n} pages ${i * 10}-${i * 10 + 10}% full`).join(', ')}`} style={{ display: 'inline-flex', alignItems: 'flex-end', gap: '1px', height: '24px' }}>
      {total === 0 ? <span class="muted">–</span> : histogram.map((n, i) => <span key={i} style={{ width: '6px', height: `${Math.max(n ? 2 : 0, (n / max) * 24)}px`, background: '#2f48b5' }} />)}
    </span>
  );
}

/** The storage engine at work: B+Trees with depth, pages and fill; the data file's map by owner; the latest journal records; free space over time. */
export function Storage({ db }: { db: string }) {
  const [layout, setLayout] = useState<Layout | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [history, setHistory] = useState<{ t: number; free: number; pending: number; used: number }[]>([]);

  useEffect(() => {
    let stopped = false;
    async function load() {
      if (document.visibilityState !== 'visible') return;
      try {
        const l = await getJson<Layout>(`/studio-api/storage?database=${encodeURIComponent(db)}`);
        if (stopped) return;
        setLayout(l);
        setError(null);
        setHistory((h) => [...h, { t: Date.now() / 1000, free: l.FreePages, pending: l.ReusePendingPages, used: l.Pages - l.FreePages - l.ReusePendingPages }].slice(-300));
      } catch (e) {
        if (!stopped) setError(e);
      }
    }
    load();
    const timer = setInterval(load, 2000);
    return () => { stopped = true; clearInterval(timer); };
  }, [db]);

  return (
    <section>
      <h1>Storage <span class="muted">· {db}</span></h1>
      <ErrorBox error={error} />
      {!layout && !error && <p class="muted">Reading the data file…</p>}
      {layout && (
        <>
          <div class="stats-line" role="status" aria-label="Data file">
            <span>Pages <strong>{number(layout.Pages)}</strong> × {bytes(layout.PageSize)} = <strong>{bytes(layout.Pages * layout.PageSize)}</strong></span>
            <span>Used <strong>{number(layout.Pages - layout.FreePages - layout.ReusePendingPages)}</strong></span>
            <span>Free <strong>{number(layout.FreePages)}</strong></span>
            <span title="Freed by a commit, reusable once older readers end">Pending reuse <strong>{number(layout.ReusePendingPages)}</strong></span>
            <span>Waiting for flush <strong>{number(layout.JournalPendingPages)}</strong></span>
            <span>Trees <strong>{layout.Trees.length}</strong></span>
          </div>
          <h2>B+Trees</h2>
          <div style={{ maxHeight: '40vh', overflow: 'auto' }} tabIndex={0} role="region" aria-label="B+Trees, scrollable">
            <table class="data" aria-label="B+Trees">
              <thead><tr><th>Tree</th><th class="num">Depth</th><th class="num">Entries</th><th class="num">Branch pages</th><th class="num">Leaf pages</th><th class="num">Overflow pages</th><th>Page fill (0–100%)</th></tr></thead>
              <tbody>
                {layout.Trees.map((t) => (
                  <tr key={t.Name}>
                    <td class="mono">{t.Name}</td><td class="num">{t.Depth}</td><td class="num">{number(t.Entries)}</td><td class="num">{number(t.BranchPages)}</td>
                    <td class="num">{number(t.LeafPages)}</td><td class="num">{number(t.OverflowPages)}</td><td><Fill histogram={t.FillHistogram} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <h2>Data file map</h2>
          <p class="muted">Each cell is {number(layout.PageMap.PagesPerCell)} page(s), coloured by the owner of most of them.</p>
          <PageMap layout={layout} />
          <div class="cards" style={{ marginTop: '12px' }}>
            <div>
              <h2>Latest journal records</h2>
              <div style={{ maxHeight: '300px', overflow: 'auto' }} tabIndex={0} role="region" aria-label="Journal records, scrollable">
                <table class="data" aria-label="Journal records">
                  <thead><tr><th class="num">Tx</th><th class="num">Pages</th><th class="num">Raw</th><th class="num">Written</th><th class="num">Ratio</th></tr></thead>
                  <tbody>
                    {[...layout.Journal].reverse().map((j) => (
                      <tr key={j.TxId}>
                        <td class="num">{j.TxId}</td><td class="num">{number(j.Pages)}</td><td class="num">{bytes(j.RawBytes)}</td><td class="num">{bytes(j.CompressedBytes)}</td>
                        <td class="num">{j.CompressedBytes ? (j.RawBytes / j.CompressedBytes).toFixed(1) + '×' : '–'}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                {layout.Journal.length === 0 && <p class="muted">No commits since the database opened.</p>}
              </div>
            </div>
            <Chart title="Free-space reuse over time (pages)" times={history.map((h) => h.t)} series={[{ label: 'free', color: '#1b6e3a', values: history.map((h) => h.free) }, { label: 'pending reuse', color: '#f59f00', values: history.map((h) => h.pending) }, { label: 'used', color: '#2f48b5', values: history.map((h) => h.used) }]} />
          </div>
        </>
      )}
    </section>
  );
}
