// The /ide connection of the logged-in user, shared by every page, and its state for the banner.
import {
  createContext,
  type ReactNode,
  useContext,
  useEffect,
  useState,
  useSyncExternalStore,
} from "react";
import { type ConnectionState, IdeConnection } from "../live/connection.ts";

const LiveContext = createContext<IdeConnection | null>(null);

export interface LiveProviderProps {
  token: string | null;
  baseUrl?: string;
  children: ReactNode;
  /** Called when the server refuses the token on the socket. */
  onUnauthorized?: () => void;
}

/** Opens one socket per login and closes it on log out. */
export function LiveProvider({ token, baseUrl = "", children, onUnauthorized }: LiveProviderProps) {
  const [connection, setConnection] = useState<IdeConnection | null>(null);
  useEffect(() => {
    if (!token) {
      setConnection(null);
      return;
    }
    const next = new IdeConnection({ token, baseUrl });
    setConnection(next);
    return () => next.close();
  }, [token, baseUrl]);
  useEffect(() => {
    if (!connection || !onUnauthorized) return;
    return connection.onState((state) => {
      if (state === "unauthorized") onUnauthorized();
    });
  }, [connection, onUnauthorized]);
  return <LiveContext.Provider value={connection}>{children}</LiveContext.Provider>;
}

/** The socket, or null while logged out or before it is made. */
export function useConnection(): IdeConnection | null {
  return useContext(LiveContext);
}

const noop = () => () => {};

/** The connection's state, re-rendering on change. */
export function useConnectionState(): ConnectionState | null {
  const connection = useConnection();
  return useSyncExternalStore(
    connection ? (listener) => connection.onState(listener) : noop,
    () => connection?.state ?? null,
  );
}
