// The clocks of the web app: a time that ticks while something on screen counts.
import { useEffect, useState, useSyncExternalStore } from "react";

/**
 * The time in milliseconds, re-rendering every `every` ms while `active`. Between ticks it holds
 * still (so memoised rows keep their props); a row that renders between ticks reads the clock itself.
 * @example const now = useNow({ active: turn.status === "processing" });
 */
export function useNow({ every = 1000, active = true }: { every?: number; active?: boolean } = {}) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => setNow(Date.now()), every);
    return () => clearInterval(timer);
  }, [active, every]);
  return now;
}

// One shared second for many small readers (a list's elapsed times): one timer, one render pass
// per tick holding only the readers, not the rows or the list around them.
const secondListeners = new Set<() => void>();
let second = Date.now();
let secondTimer: ReturnType<typeof setInterval> | null = null;

function subscribeSecond(listener: () => void): () => void {
  secondListeners.add(listener);
  secondTimer ??= setInterval(() => {
    second = Date.now();
    for (const each of secondListeners) each();
  }, 1000);
  return () => {
    secondListeners.delete(listener);
    if (secondListeners.size > 0 || !secondTimer) return;
    clearInterval(secondTimer);
    secondTimer = null;
  };
}

/**
 * The time in milliseconds, ticking every second with every other reader of this clock; a
 * component that renders between ticks (its row changed) reads the time itself.
 * @example const elapsed = useSecond() - startedAt;
 */
export function useSecond(): number {
  const tick = useSyncExternalStore(subscribeSecond, () => second);
  return Math.max(tick, Date.now());
}
