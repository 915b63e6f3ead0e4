import { useEffect, useState } from 'preact/hooks';

/**
 * Calls `load` now and every `intervalMs` after each answer (never two at once), while the component lives and
 * `key` stays the same; `refresh()` loads again at once. Errors other than the abort at unmount go to `onError`.
 */
export function usePolled(load: (signal: AbortSignal) => Promise<void>, key: string, onError: (e: unknown) => void, intervalMs = 1000): () => void {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        await load(controller.signal);
      } catch (e) {
        if ((e as Error).name !== 'AbortError') onError(e);
      }
      if (!controller.signal.aborted) timer = setTimeout(poll, intervalMs);
    };
    poll();
    return () => { controller.abort(); clearTimeout(timer); };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, tick]);
  return () => setTick((n) => n + 1);
}
