import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series { label: string; color: string; values: (number | null)[] }

interface Props { title: string; times: number[]; series: Series[]; unit?: string; height?: number }

const format = (unit?: string) => (_: uPlot, v: number | null) => (v == null ? '–' : `${v >= 100 ? v.toFixed(0) : v.toFixed(2)}${unit ? ' ' + unit : ''}`);

/** A live line chart (uPlot) of the given series over time (seconds since the epoch). */
export function Chart({ title, times, series, unit, height = 180 }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const labels = series.map((s) => s.label).join('|');

  useEffect(() => {
    const width = Math.max(260, (host.current?.clientWidth ?? 300) - 4);
    plot.current = new uPlot({
      width,
      height,
      legend: { show: true },
      scales: { x: { time: true } },
      axes: [{ stroke: '#4f5868' }, { stroke: '#4f5868', size: 60, values: (_, ticks) => ticks.map((t) => (Math.abs(t) >= 1e6 ? (t / 1e6).toFixed(1) + 'M' : Math.abs(t) >= 1e3 ? (t / 1e3).toFixed(1) + 'K' : String(+t.toFixed(2)))) }],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, value: format(unit) }))],
    }, [times, ...series.map((s) => s.values)] as uPlot.AlignedData, host.current!);
    const resize = () => plot.current?.setSize({ width: Math.max(260, (host.current?.clientWidth ?? 300) - 4), height });
    window.addEventListener('resize', resize);
    return () => { window.removeEventListener('resize', resize); plot.current?.destroy(); };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [labels, height, unit]);

  useEffect(() => {
    plot.current?.setData([times, ...series.map((s) => s.values)] as uPlot.AlignedData);
  });

  return (
    <figure class="chart" aria-label={title} style={{ margin: 0 }}>
      <h3>{title}</h3>
      <div ref={host} />
    </figure>
  );
}
