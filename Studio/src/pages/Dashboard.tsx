import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type ServerMetrics } from '../api';
import { Chart } from '../components/Chart';
import { ErrorBox } from '../components/ErrorBox';
import { bytes, number } from '../format';

const Keep = 120; // seconds shown

interface Point {
  t: number;
  writes: number;
  requests: number;
  p50: number;
  p99: number;
  indexed: number;
  lag: number;
  heap: number;
  workingSet: number;
  dataFile: number;
  journal: number;
}

const sum = (m: ServerMetrics, f: (d: ServerMetrics['Databases'][number]) => number) => m.Databases.reduce((s, d) => s + f(d), 0);

/** Live charts of the server, one sample a second while the page is visible: rates from the differences of the server's counters. */
export function Dashboard() {
  const [points, setPoints] = useState<Point[]>([]);
  const [error, setError] = useState<unknown>(null);
  const previous = useRef<{ at: number; m: ServerMetrics } | null>(null);

  useEffect(() => {
    let stopped = false;
    async function sample() {
      if (document.visibilityState !== 'visible') return;
      try {
        const m = await api.metrics();
        if (stopped) return;
        const at = Date.now() / 1000;
        const p = previous.current;
        previous.current = { at, m };
        setError(null);
        if (!p) return;
        const dt = Math.max(0.001, at - p.at);
        const byName = new Map(p.m.Databases.map((d) => [d.Name, d]));
        const delta = (f: (d: ServerMetrics['Databases'][number]) => number) =>
          m.Databases.reduce((s, d) => { const before = byName.get(d.Name); return s + (before ? Math.max(0, f(d) - f(before)) : 0); }, 0);
        const point: Point = {
          t: at,
          writes: delta((d) => d.LastDocEtag) / dt,
          requests: m.RequestsLastSecond,
          p50: m.RequestP50Ms,
          p99: m.RequestP99Ms,
          indexed: delta((d) => d.IndexedDocuments) / dt,
          lag: sum(m, (d) => d.IndexLag),
          heap: m.ManagedHeapBytes / 2 ** 20,
          workingSet: m.WorkingSetBytes / 2 ** 20,
          dataFile: sum(m, (d) => d.DataFileBytes) / 2 ** 20,
          journal: delta((d) => d.JournalBytesWritten) / dt / 2 ** 20,
        };
        setPoints((ps) => [...ps, point].slice(-Keep));
      } catch (e) {
        if (!stopped) setError(e);
      }
    }
    sample();
    const timer = setInterval(sample, 1000);
    return () => { stopped = true; clearInterval(timer); };
  }, []);

  const times = points.map((p) => p.t);
  const col = (f: (p: Point) => number) => points.map(f);
  const last = points[points.length - 1];
  const databases = previous.current?.m.Databases ?? [];
  return (
    <section>
      <h1>Dashboard</h1>
      <ErrorBox error={error} context="Metrics are not coming in" />
      <p class="muted">Every second while this page is visible; the open databases ({databases.length ? databases.map((d) => d.Name).join(', ') : 'none yet'}).</p>
      {last && (
        <div class="stats-line" role="status" aria-label="Current values">
          <span>Writes/s <strong>{number(Math.round(last.writes))}</strong></span>
          <span>Requests/s <strong>{number(last.requests)}</strong></span>
          <span>p99 <strong>{last.p99.toFixed(2)} ms</strong></span>
          <span>Indexing docs/s <strong>{number(Math.round(last.indexed))}</strong></span>
          <span>Index lag <strong>{number(last.lag)}</strong></span>
          <span>Memory <strong>{bytes(last.workingSet * 2 ** 20)}</strong></span>
          <span>Data files <strong>{bytes(last.dataFile * 2 ** 20)}</strong></span>
        </div>
      )}
      <div class="cards">
        <Chart title="Document writes per second" times={times} series={[{ label: 'writes/s', color: '#2f48b5', values: col((p) => p.writes) }]} />
        <Chart title="Requests per second" times={times} series={[{ label: 'requests/s', color: '#1b6e3a', values: col((p) => p.requests) }]} />
        <Chart title="Request latency (ms)" unit="ms" times={times} series={[{ label: 'p50', color: '#6b7a99', values: col((p) => p.p50) }, { label: 'p99', color: '#b3261e', values: col((p) => p.p99) }]} />
        <Chart title="Indexing" times={times} series={[{ label: 'docs/s', color: '#8a5300', values: col((p) => p.indexed) }, { label: 'lag (etags)', color: '#7048b5', values: col((p) => p.lag) }]} />
        <Chart title="Memory (MB)" unit="MB" times={times} series={[{ label: 'working set', color: '#2f48b5', values: col((p) => p.workingSet) }, { label: 'managed heap', color: '#1b6e3a', values: col((p) => p.heap) }]} />
        <Chart title="Storage" unit="MB" times={times} series={[{ label: 'data files (MB)', color: '#4f5868', values: col((p) => p.dataFile) }, { label: 'journal MB/s', color: '#b3261e', values: col((p) => p.journal) }]} />
      </div>
    </section>
  );
}
