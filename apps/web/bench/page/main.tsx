// Bench page: the real live pipeline (IdeConnection → TurnStore → TurnPanel) for one turn, fed by
// the bench's Socket.IO server, with a probe that times tool_start arrival to its row on screen.
import { StrictMode, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
import { ApiClient } from "../../src/api/client.ts";
import { QueryProvider } from "../../src/app/query-client.tsx";
import { IdeConnection } from "../../src/live/connection.ts";
import { TurnStore } from "../../src/live/turn-store.ts";
import { turnRecord } from "../../src/test/events.ts";
import { TurnPanel } from "../../src/turn/turn-panel.tsx";
import "../../src/styles.css";

interface Probe {
  callId: string;
  receivedAt: number;
  inDomAt?: number;
  paintedAt?: number;
}

declare global {
  interface Window {
    bench: {
      lastSeq(): number;
      probes: Probe[];
      firstEventAt: number | null;
      allAppliedAt: number | null;
    };
  }
}

const params = new URLSearchParams(location.search);
const turnId = params.get("turn") ?? "64b0000000000000000000aa";
const expected = Number(params.get("events") ?? 0);
const store = new TurnStore(
  turnRecord({ _id: turnId, status: "processing", limits: { costBudget: 2 } }),
  {
    api: new ApiClient(),
  },
);
const connection = new IdeConnection({ token: "bench" });
const probes = new Map<string, Probe>();
window.bench = {
  lastSeq: () => store.view.lastSeq,
  probes: [],
  firstEventAt: null,
  allAppliedAt: null,
};

// Registered before the store's own subscription, so it runs first for every socket message.
connection.subscribeTurn(turnId, {
  after: () => store.view.lastSeq,
  onEvents: ({ events }) => {
    const now = performance.now();
    window.bench.firstEventAt ??= now;
    for (const event of events) {
      if (event.type === "tool_start" && event.data.callId.startsWith("probe-")) {
        const probe = { callId: event.data.callId, receivedAt: now };
        probes.set(probe.callId, probe);
        window.bench.probes.push(probe);
      }
    }
  },
});
store.follow(connection);
store.subscribe(() => {
  if (window.bench.allAppliedAt === null && expected > 0 && store.view.lastSeq >= expected) {
    requestAnimationFrame(() => {
      window.bench.allAppliedAt = performance.now();
    });
  }
});

// A row counts as rendered when it is in the DOM; painted at the next frame after that.
new MutationObserver((records) => {
  const now = performance.now();
  for (const record of records) {
    for (const node of record.addedNodes) {
      if (!(node instanceof HTMLElement)) continue;
      const rows = node.matches("[data-call-id]")
        ? [node]
        : [...node.querySelectorAll("[data-call-id]")];
      for (const row of rows) {
        const probe = probes.get((row as HTMLElement).dataset.callId ?? "");
        if (!probe || probe.inDomAt !== undefined) continue;
        probe.inDomAt = now;
        requestAnimationFrame(() => {
          probe.paintedAt = performance.now();
        });
      }
    }
  }
}).observe(document.body, { childList: true, subtree: true });

const noop = async () => {};
function Live() {
  const snapshot = useSyncExternalStore(store.subscribe, store.getSnapshot);
  return (
    <div className="page session-page">
      <TurnPanel
        snapshot={snapshot}
        actions={{
          cancel: noop,
          resume: noop,
          decide: noop,
          revert: () => Promise.reject(new Error("The benchmark page does not revert turns")),
          loadEvents: () => {},
        }}
      />
    </div>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryProvider>
      <Live />
    </QueryProvider>
  </StrictMode>,
);
