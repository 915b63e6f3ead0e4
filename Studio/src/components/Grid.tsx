import type { ComponentChildren } from 'preact';
import { useRef } from 'preact/hooks';
import { useVirtualizer } from '@tanstack/react-virtual';

export interface Column<T> { key: string; label: string; width: number; render: (row: T) => ComponentChildren; numeric?: boolean }

interface Props<T> {
  label: string;
  count: number;
  row: (index: number) => T | undefined; // undefined: not loaded yet (the grid asks for it through onRange)
  columns: Column<T>[];
  onRange?: (first: number, last: number) => void;
  onOpen?: (row: T, index: number) => void;
  selected?: Set<number>;
  onToggle?: (index: number) => void;
  onToggleAll?: () => void;
  height?: string;
  rowHeight?: number;
}

/** A virtualized grid: only the visible rows are in the page, so it scrolls through any number of rows. */
export function Grid<T>(props: Props<T>) {
  const scroller = useRef<HTMLDivElement>(null);
  const rowHeight = props.rowHeight ?? 30;
  const virtualizer = useVirtualizer({ count: props.count, getScrollElement: () => scroller.current, estimateSize: () => rowHeight, overscan: 10 });
  const items = virtualizer.getVirtualItems();
  if (items.length > 0) props.onRange?.(items[0].index, items[items.length - 1].index);
  const width = props.columns.reduce((s, c) => s + c.width, 0) + (props.onToggle ? 36 : 0);
  const selectable = !!props.onToggle;
  return (
    <div class="grid" ref={scroller} style={{ height: props.height ?? '60vh' }} role="grid" aria-label={props.label} aria-rowcount={props.count + 1}>
      <div class="row head" role="row" aria-rowindex={1} style={{ width: `${width}px`, minWidth: '100%' }}>
        {selectable && (
          <div class="cell check" role="columnheader">
            <input type="checkbox" aria-label="Select all loaded rows" onChange={() => props.onToggleAll?.()} checked={!!props.selected && props.selected.size > 0 && props.selected.size >= props.count} />
          </div>
        )}
        {props.columns.map((c) => <div key={c.key} class={'cell' + (c.numeric ? ' num' : '')} role="columnheader" style={{ width: `${c.width}px` }}>{c.label}</div>)}
      </div>
      <div style={{ height: `${virtualizer.getTotalSize()}px`, width: `${width}px`, minWidth: '100%', position: 'relative' }}>
        {items.map((item) => {
          const data = props.row(item.index);
          const isSelected = props.selected?.has(item.index) ?? false;
          return (
            <div
              key={item.key}
              class={'row' + (isSelected ? ' selected' : '')}
              role="row"
              aria-rowindex={item.index + 2}
              aria-selected={selectable ? isSelected : undefined}
              tabIndex={0}
              style={{ position: 'absolute', top: 0, left: 0, width: '100%', height: `${rowHeight}px`, transform: `translateY(${item.start}px)` }}
              onDblClick={() => data && props.onOpen?.(data, item.index)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && data) props.onOpen?.(data, item.index);
                if (e.key === ' ' && selectable) { e.preventDefault(); props.onToggle?.(item.index); }
              }}
            >
              {selectable && (
                <div class="cell check" role="gridcell">
                  <input type="checkbox" aria-label={`Select row ${item.index + 1}`} checked={isSelected} onChange={() => props.onToggle?.(item.index)} />
                </div>
              )}
              {props.columns.map((c) => (
                <div key={c.key} class={'cell' + (c.numeric ? ' num' : '')} role="gridcell" style={{ width: `${c.width}px` }}>
                  {data ? c.render(data) : <span class="muted">…</span>}
                </div>
              ))}
            </div>
          );
        })}
      </div>
    </div>
  );
}

/** A value as one short line for a grid cell. */
export function preview(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = JSON.stringify(value);
  return text.length > 200 ? text.slice(0, 200) + '…' : text;
}

/** Columns for documents: the id, then the properties the first rows have (at most 12). */
export function documentColumns(rows: Record<string, unknown>[], idLabel = 'Id'): Column<Record<string, unknown>>[] {
  const keys: string[] = [];
  for (const r of rows.slice(0, 50)) {
    for (const k of Object.keys(r)) if (k !== '@metadata' && !keys.includes(k) && keys.length < 12) keys.push(k);
  }
  return [
    { key: '@id', label: idLabel, width: 200, render: (r) => <span class="mono">{String((r['@metadata'] as Record<string, unknown> | undefined)?.['@id'] ?? '')}</span> },
    ...keys.map((k) => ({ key: k, label: k, width: 160, render: (r: Record<string, unknown>) => preview(r[k]) })),
  ];
}
