// The one clock of the web app: a time that ticks while something on screen counts.
import { useEffect, useState } from "react";

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
