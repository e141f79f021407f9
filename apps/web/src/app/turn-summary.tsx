// Told without looking: the user's turn counts for the top bar, `(N) ` in the tab title while N
// turns await approval, a dot on the favicon while one runs, and (opted in) a browser
// notification when a turn finishes, fails or needs approval.
import type { ChatTurn, TurnSummary } from "@gadget/protocol";
import {
  createContext,
  type ReactNode,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useState,
  useSyncExternalStore,
} from "react";
import {
  emptySummary,
  faviconWithDot,
  type TurnNews,
  TurnSummaryStore,
  titleWithCount,
} from "../live/turn-summary.ts";
import { useApi } from "./auth.tsx";
import { useConnection } from "./live.tsx";

/** The app's favicon (public/favicon.svg), drawn again with a dot while a turn runs. */
const faviconSvg =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2f6feb"/><path d="M9 16a7 7 0 0 1 12-4.9M23 16a7 7 0 0 1-12 4.9" stroke="#fff" stroke-width="2.6" fill="none" stroke-linecap="round"/><circle cx="16" cy="16" r="2.4" fill="#fff"/></svg>';
const faviconHref = "/favicon.svg";
const notificationsKey = "gadget.notifications";

const SummaryContext = createContext<TurnSummaryStore | null>(null);

const headlines: Record<TurnNews, string> = {
  completed: "Turn completed",
  failed: "Turn failed",
  cancelled: "Turn stopped",
  interrupted: "Turn interrupted",
  awaiting_approval: "A turn needs your approval",
};

function notificationsSupported(): boolean {
  return typeof window !== "undefined" && "Notification" in window;
}

/** Shows a notification for a turn's news, if the user turned them on and the browser allows. */
function notify(turn: ChatTurn, news: TurnNews, open: () => void): void {
  if (!notificationsSupported() || Notification.permission !== "granted") return;
  if (localStorage.getItem(notificationsKey) !== "on") return;
  const prompt = turn.prompt.length > 120 ? `${turn.prompt.slice(0, 120)}…` : turn.prompt;
  const body = news === "failed" && turn.error ? `${prompt}\n${turn.error.message}` : prompt;
  const notification = new Notification(headlines[news], { body, tag: `${turn._id}:${news}` });
  notification.onclick = () => {
    window.focus();
    open();
    notification.close();
  };
}

/** Keeps the counts for the pages below and tells the tab title and favicon. */
export function TurnSummaryProvider({
  children,
  onOpenActivity,
}: {
  children: ReactNode;
  /** Where a clicked notification leads. */
  onOpenActivity: () => void;
}) {
  const api = useApi();
  const connection = useConnection();
  const store = useMemo(() => new TurnSummaryStore({ api }), [api]);
  useEffect(() => {
    if (!connection) return;
    const detach = store.attach(connection);
    const stopNews = store.onNews((turn, news) => notify(turn, news, onOpenActivity));
    return () => {
      detach();
      stopNews();
    };
  }, [store, connection, onOpenActivity]);
  const summary = useSyncExternalStore(store.subscribe, store.getSnapshot);
  useEffect(() => {
    document.title = titleWithCount(document.title, summary.awaitingApproval);
  }, [summary.awaitingApproval]);
  useEffect(() => {
    const running = summary.running > 0;
    const link = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
    if (!link) return;
    link.href = running ? faviconWithDot(faviconSvg) : faviconHref;
    link.dataset.running = String(running);
  }, [summary.running]);
  useEffect(
    () => () => {
      document.title = titleWithCount(document.title, 0);
      const link = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
      if (link) {
        link.href = faviconHref;
        link.dataset.running = "false";
      }
    },
    [],
  );
  return <SummaryContext.Provider value={store}>{children}</SummaryContext.Provider>;
}

/** The user's live turn counts (zeros outside a provider). */
export function useTurnSummary(): TurnSummary {
  const store = useContext(SummaryContext);
  return useSyncExternalStore(
    store ? store.subscribe : noop,
    store ? store.getSnapshot : () => emptySummary,
  );
}

const noop = () => () => {};

/**
 * Why notifications are off although the user asked for them: the browser's settings block them
 * (`denied`), or its permission prompt was closed without an answer (`unanswered`).
 */
export type NotificationsRefusal = "denied" | "unanswered" | null;

/** Whether turn notifications are on, and a switch that asks the browser's permission first. */
export function useTurnNotifications(): {
  supported: boolean;
  enabled: boolean;
  refusal: NotificationsRefusal;
  setEnabled(enabled: boolean): Promise<void>;
} {
  const supported = notificationsSupported();
  const [enabled, setEnabledState] = useState(
    () =>
      supported &&
      localStorage.getItem(notificationsKey) === "on" &&
      Notification.permission === "granted",
  );
  const [refusal, setRefusal] = useState<NotificationsRefusal>(() =>
    supported && Notification.permission === "denied" ? "denied" : null,
  );
  const setEnabled = useCallback(
    async (next: boolean) => {
      if (!supported) return;
      if (next && Notification.permission !== "granted") {
        const permission = await Notification.requestPermission();
        if (permission !== "granted") {
          setRefusal(permission === "denied" ? "denied" : "unanswered");
          return;
        }
      }
      setRefusal(null);
      localStorage.setItem(notificationsKey, next ? "on" : "off");
      setEnabledState(next);
    },
    [supported],
  );
  return { supported, enabled, refusal, setEnabled };
}
