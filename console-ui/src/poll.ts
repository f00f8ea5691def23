// usePoll: loads something now and again every refresh interval while the page is shown; keeps
// the last good value when a refresh fails, and says why it failed.
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export interface Polled<T> {
  /** The last value loaded, undefined until the first load answered. */
  readonly data: T | undefined;
  /** The last load's error, cleared by the next good load. */
  readonly error: ApiError | Error | undefined;
  /** Loads again at once (after a write). */
  readonly reload: () => void;
}

/** Calls `load` at once and every `everyMs` while mounted, again whenever `deps` change. */
export function usePoll<T>(load: () => Promise<T>, everyMs: number, deps: readonly unknown[]): Polled<T> {
  const key = JSON.stringify(deps);
  const [loaded, setLoaded] = useState<{ key: string; value: T } | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const value = await load();
        if (!live) return;
        setLoaded({ key, value });
        setError(undefined);
      } catch (err) {
        if (live) setError(err instanceof Error ? err : new Error(String(err)));
      }
      if (live) timer = setTimeout(run, everyMs);
    };
    void run();
    return () => {
      live = false;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [key, everyMs, tick]);
  // A value loaded for other deps (another topic or address) is not shown.
  return { data: loaded?.key === key ? loaded.value : undefined, error, reload: () => setTick((n) => n + 1) };
}
