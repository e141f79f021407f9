// Loads data for a page and keeps the error in words: pages never render a blank panel.
import { type DependencyList, useCallback, useEffect, useRef, useState } from "react";
import { type ApiError, toApiError } from "../api/api-error.ts";

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload(): void;
  /** Replaces the data locally (after a create, or a live update). */
  setData(update: (current: T | undefined) => T | undefined): void;
}

/**
 * Runs `load` when `deps` change and on reload(); stale answers are dropped.
 * @example const drones = useLoader(() => api.listDrones().then((a) => a.drones), [api]);
 */
export function useLoader<T>(load: () => Promise<T>, deps: DependencyList): Loaded<T> {
  const [data, setDataState] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    let current = true;
    setLoading(true);
    loadRef
      .current()
      .then((value) => {
        if (!current) return;
        setDataState(value);
        setError(null);
      })
      .catch((caught: unknown) => {
        if (current) setError(toApiError(caught));
      })
      .finally(() => {
        if (current) setLoading(false);
      });
    return () => {
      current = false;
    };
  }, [...deps, generation]);

  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  const setData = useCallback(
    (update: (current: T | undefined) => T | undefined) => setDataState(update),
    [],
  );
  return { data, error, loading, reload, setData };
}
