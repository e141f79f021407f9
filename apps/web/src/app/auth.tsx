// Who is logged in: the bearer token (kept in localStorage), the user, and the API client using it.
import type { User } from "@gadget/protocol";
import {
  createContext,
  type ReactNode,
  useCallback,
  useContext,
  useMemo,
  useRef,
  useState,
} from "react";
import { ApiClient } from "../api/client.ts";

const TOKEN_KEY = "gadget.token";
const USER_KEY = "gadget.user";

/** What the login page says when the server refused this browser's token. */
export const LOGIN_ENDED =
  "You were logged out: your login expired or was ended from another sign-in. Log in again.";

export interface AuthState {
  token: string | null;
  user: User | null;
  /** Why the user was logged out without asking (an expired token), in words. */
  notice: string | null;
  api: ApiClient;
  signIn(token: string, user: User): void;
  /** Ends this browser's sign-in on the server (best effort) and forgets it here. */
  signOut(notice?: string): void;
  /** Forgets the login here only: for a token the server has already refused or revoked. */
  forget(notice?: string): void;
}

const AuthContext = createContext<AuthState | null>(null);

function readStored(): { token: string | null; user: User | null } {
  try {
    const token = localStorage.getItem(TOKEN_KEY);
    const userText = localStorage.getItem(USER_KEY);
    return { token, user: token && userText ? (JSON.parse(userText) as User) : null };
  } catch {
    return { token: null, user: null };
  }
}

export interface AuthProviderProps {
  children: ReactNode;
  /** Server origin for REST; "" means this page's origin. */
  baseUrl?: string;
}

/** Holds the login and gives every page the API client. */
export function AuthProvider({ children, baseUrl = "" }: AuthProviderProps) {
  const [state, setState] = useState(() => ({ ...readStored(), notice: null as string | null }));
  const tokenRef = useRef(state.token);
  tokenRef.current = state.token;

  const forget = useCallback((notice?: string) => {
    try {
      localStorage.removeItem(TOKEN_KEY);
      localStorage.removeItem(USER_KEY);
    } catch {
      // Storage may be unavailable (private mode); the in-memory state still clears.
    }
    tokenRef.current = null;
    setState({ token: null, user: null, notice: notice ?? null });
  }, []);

  const signIn = useCallback((token: string, user: User) => {
    try {
      localStorage.setItem(TOKEN_KEY, token);
      localStorage.setItem(USER_KEY, JSON.stringify(user));
    } catch {
      // Without storage the login lasts until the tab closes.
    }
    tokenRef.current = token;
    setState({ token, user, notice: null });
  }, []);

  const api = useMemo(
    () =>
      new ApiClient({
        baseUrl,
        getToken: () => tokenRef.current,
        // A refusal of an older token (answered after a logout or a new login) changes nothing.
        onUnauthorized: (token) => {
          if (token === tokenRef.current) forget(LOGIN_ENDED);
        },
      }),
    [baseUrl, forget],
  );

  const signOut = useCallback(
    (notice?: string) => {
      // The request carries the token, so it is sent before the token is forgotten; its answer is
      // not awaited: a slow or unreachable server must not keep the user logged in here.
      if (tokenRef.current) void api.logout().catch(() => {});
      forget(notice);
    },
    [api, forget],
  );

  const value = useMemo<AuthState>(
    () => ({ ...state, api, signIn, signOut, forget }),
    [state, api, signIn, signOut, forget],
  );
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): AuthState {
  const value = useContext(AuthContext);
  if (!value) throw new Error("useAuth outside AuthProvider");
  return value;
}

export function useApi(): ApiClient {
  return useAuth().api;
}
