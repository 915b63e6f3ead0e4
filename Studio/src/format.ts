export const number = (n: number | undefined | null) => (n == null ? '–' : n.toLocaleString('en-US'));

export function bytes(n: number | undefined | null): string {
  if (n == null) return '–';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v >= 100 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}

export const dbPath = (db: string, rest = '') => `/db/${encodeURIComponent(db)}${rest}`;

/** A server time (ISO) as UTC for people; "never" when there is none. */
export const utc = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString('en-GB', { timeZone: 'UTC' }) + ' UTC' : 'never');
