// The Activity page with 1,000 turns of the user (50 live, streaming 100 events/s in all, 950
// finished) in Chromium against the real server: how soon its rows show, and the time from an
// event at the server (the relay handing the stored event to its subscribers) to the row showing
// it; beside the session page's figures for the same events, measured in the same run.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { type AgentEvent, agentEvent } from "@gadget/protocol";
import { startTestServer } from "@gadget/server/testing";
import { findRepoRoot, startServices } from "@gadget/services";
import { buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { markdownTable, median, percentile, sleep } from "@gadget/testkit/measure";
import { registerDrone, ScriptedDrone, signup } from "@gadget/testkit/wire";
import { Types } from "mongoose";
import type { Page } from "playwright-core";
import { webDir } from "../paths.ts";

const liveTurns = 50;
const finishedTurns = 950;
const eventsPerSecond = 100;
const projects = 5;
const drones = 5;
const warmupMs = 3_000;
const activityMs = Number(process.env.BENCH_ACTIVITY_MS ?? 15_000);
const sessionMs = Number(process.env.BENCH_SESSION_MS ?? 30_000);

const epochNow = () => performance.timeOrigin + performance.now();

/** Watches the page's DOM: when each probe's row (or tool row) first showed it, and painted. */
function instrument(mode: "activity" | "session") {
  const shown = new Map<string, { inDom: number; painted?: number }>();
  const stamp = () => performance.timeOrigin + performance.now();
  const mark = (key: string) => {
    if (shown.has(key)) return;
    const entry: { inDom: number; painted?: number } = { inDom: stamp() };
    shown.set(key, entry);
    requestAnimationFrame(() => {
      entry.painted = stamp();
    });
  };
  let firstRow: number | null = null;
  let allRows: number | null = null;
  const observer = new MutationObserver((records) => {
    if (firstRow === null && document.querySelector(".activity-row, article.turn")) {
      firstRow = performance.now();
    }
    if (allRows === null) {
      const rows = document.querySelectorAll(".activity-row").length;
      if ((mode === "activity" && rows >= 100) || document.querySelector(".tool-row")) {
        allRows = performance.now();
      }
    }
    for (const record of records) {
      const target = record.target instanceof Element ? record.target : record.target.parentElement;
      if (!target) continue;
      if (mode === "activity") {
        const code = target.closest(".activity-row")?.querySelector(".activity-tool code");
        const name = code?.textContent ?? "";
        if (name.startsWith("probe_")) mark(name);
      } else {
        for (const node of record.addedNodes) {
          if (!(node instanceof Element)) continue;
          const rows = node.matches(".tool-row") ? [node] : node.querySelectorAll(".tool-row");
          for (const row of rows) {
            const callId = row.getAttribute("data-call-id") ?? "";
            if (callId.startsWith("probe_")) mark(callId);
          }
        }
      }
    }
  });
  const start = () =>
    observer.observe(document, { subtree: true, childList: true, characterData: true });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  (window as unknown as { bench: unknown }).bench = {
    shown: () => [...shown].map(([key, entry]) => ({ key, ...entry })),
    firstRow: () => firstRow,
    allRows: () => allRows,
  };
}

interface Stream {
  stop(): Promise<void>;
  /** When the server relayed each probe (epoch ms), by probe name. */
  relayedAt: Map<string, number>;
}

const row = (name: string, values: string[]) => [name, ...values];

async function main() {
  const root = await mkdtemp(path.join(tmpdir(), "gadget-activity-bench-"));
  const services = await startServices({
    rootDir: findRepoRoot(),
    dataDir: path.join(root, "services"),
    mongoUrl: process.env.MONGO_URL,
    redisUrl: process.env.REDIS_URL,
  });
  const outDir = path.join(root, "web");
  await buildApp(webDir, outDir);
  const server = await startTestServer(
    {
      mongoUrl: services.mongoUrl,
      redisUrl: services.redisUrl,
      webDir: outDir,
      droneGraceMs: 60_000,
      // As shipped (the test config pushes turn updates more often).
      turnUpdateIntervalMs: 250,
    },
    `activity_bench_${process.pid}`,
  );
  const closers: Array<() => unknown> = [];
  const browser = await launchBrowser({ viewport: { width: 1280, height: 900 } });
  try {
    const user = await signup(server.url, "bench");
    const provider = await user.post("/api/providers", {
      name: "bench",
      baseUrl: "http://127.0.0.1:9/v1",
      apiKey: "sk-bench",
      modelId: "bench-model",
    });
    const providerId = String(provider.body.provider._id);
    const sessions: Array<{ sessionId: string; projectId: string }> = [];
    for (let index = 0; index < projects; index++) {
      const project = await user.post("/api/projects", {
        name: `project-${index}`,
        gitUrl: `https://example.com/p${index}.git`,
      });
      const projectId = String(project.body.project._id);
      for (let session = 0; session < liveTurns / projects; session++) {
        const created = await user.post(`/api/projects/${projectId}/sessions`, {
          name: `session ${index}.${session}`,
        });
        sessions.push({ sessionId: String(created.body.session._id), projectId });
      }
    }

    // The finished turns, as the server stores them (created through the API they would take
    // a drone each).
    const { models } = server.context;
    const now = Date.now();
    await models.ChatTurn.insertMany(
      Array.from({ length: finishedTurns }, (_, index) => {
        const { sessionId, projectId } = sessions[index % sessions.length]!;
        const createdAt = new Date(now - (index + 60) * 60_000);
        return {
          user: new Types.ObjectId(user.userId),
          session: new Types.ObjectId(sessionId),
          project: new Types.ObjectId(projectId),
          provider: new Types.ObjectId(providerId),
          llm: "bench-model",
          mode: "code",
          prompt: `Finished task number ${index}: tidy the module and its tests`,
          status: index % 10 === 0 ? "failed" : "completed",
          exitReason: index % 10 === 0 ? "error" : "completed",
          stats: { passes: 3, cost: index % 3 === 0 ? 0 : 0.0123, durationMs: 45_000 },
          changes: [{ path: `src/file-${index}.ts`, status: "modified" }],
          lastSeq: 40,
          createdAt,
          queuedAt: createdAt,
          startedAt: createdAt,
          finishedAt: new Date(createdAt.getTime() + 45_000),
        };
      }),
    );

    // The live turns: five scripted drones take ten each.
    const fleet: ScriptedDrone[] = [];
    for (let index = 0; index < drones; index++) {
      const { droneId, credential } = await registerDrone(user, {
        name: `drone-${index}`,
        capacity: liveTurns / drones,
      });
      const drone = await ScriptedDrone.connect({
        url: server.url,
        droneId,
        credential,
        capacity: liveTurns / drones,
      });
      fleet.push(drone);
      closers.push(() => drone.close());
    }
    await sleep(500);
    const holder = new Map<string, ScriptedDrone>();
    const turnIds: string[] = [];
    for (const { sessionId } of sessions) {
      const posted = await user.post(`/api/sessions/${sessionId}/turns`, {
        prompt: `Live task in ${sessionId}`,
        providerId,
      });
      turnIds.push(String(posted.body.turn._id));
    }
    await Promise.all(
      fleet.map(async (drone) => {
        for (let taken = 0; taken < liveTurns / drones; taken++) {
          const order = await drone.nextWorkOrder(30_000);
          holder.set(order.turnId, drone);
        }
      }),
    );
    for (const turnId of turnIds) {
      await holder
        .get(turnId)!
        .stream(turnId, [agentEvent("status", { message: "Pass 1", pass: 1 })]);
    }

    const stream = startStream(
      server,
      user.userId,
      turnIds,
      sessions.map((session) => session.sessionId),
      holder,
    );
    closers.push(() => stream.stop());
    const token = user.token ?? "";
    const page = browser.page;
    await page.context().addInitScript(
      ({ token, me }) => {
        localStorage.setItem("gadget.token", token);
        localStorage.setItem("gadget.user", me);
      },
      { token, me: JSON.stringify({ _id: user.userId, email: user.email, name: "Bench" }) },
    );

    // The page's two reads, alone, while the turns stream.
    const answerMs = async (query: string) => {
      const times: number[] = [];
      for (let round = 0; round < 7; round++) {
        const started = performance.now();
        const answer = await user.get(`/api/turns?${query}`);
        if (answer.status !== 200) throw new Error(`GET /api/turns?${query}: ${answer.status}`);
        times.push(performance.now() - started);
      }
      return median(times);
    };
    const liveRead = await answerMs(
      "status=queued,dispatched,processing,awaiting_approval&limit=200",
    );
    const finishedRead = await answerMs("status=completed,failed,cancelled,interrupted&limit=50");
    const sessionRead = await answerMs("").then(async () => {
      const times: number[] = [];
      for (let round = 0; round < 7; round++) {
        const started = performance.now();
        await user.get(`/api/sessions/${sessions[0]!.sessionId}/turns`);
        times.push(performance.now() - started);
      }
      return median(times);
    });

    const activity = await measurePage(page, `${server.url}/`, "activity", stream, activityMs);
    // The session page of the first live turn: the same stream, that turn's probes.
    const first = sessions[0]!;
    const session = await measurePage(
      page,
      `${server.url}/projects/${first.projectId}/sessions/${first.sessionId}`,
      "session",
      stream,
      sessionMs,
    );

    const fmt = (value: number | null) => (value === null ? "—" : `${value.toFixed(0)} ms`);
    type Startup = ReturnType<typeof readStartup>;
    const startupLine = (startup: Startup) =>
      [startup.documentAnswered, startup.scriptsLoaded, startup.firstRequest, startup.readsAnswered]
        .map(fmt)
        .join(" · ");
    const startupSize = (startup: Startup) =>
      `${(startup.scriptBytes / 1024).toFixed(0)} KB · ${startup.readsBeforeRow || "—"}`;
    const latency = (values: number[], p: number) =>
      values.length === 0 ? "—" : `${percentile(values, p).toFixed(1)} ms`;
    const rows = [
      row("first row shown (from navigation)", [fmt(activity.firstRow), fmt(session.firstRow)]),
      row(
        "  of it: document answered · scripts loaded · first API request · last API answer before it",
        [startupLine(activity.startup), startupLine(session.startup)],
      ),
      row("  scripts' size (encoded) · API reads before the first row", [
        startupSize(activity.startup),
        startupSize(session.startup),
      ]),
      row("all rows shown (activity: 100 rows; session: its tool rows)", [
        fmt(activity.allRows),
        fmt(session.allRows),
      ]),
      row("event at the server → row in the DOM, p50", [
        latency(activity.inDom, 50),
        latency(session.inDom, 50),
      ]),
      row("event at the server → row in the DOM, p95 (target < 100 ms)", [
        latency(activity.inDom, 95),
        latency(session.inDom, 95),
      ]),
      row("event at the server → next frame, p95", [
        latency(activity.painted, 95),
        latency(session.painted, 95),
      ]),
      row("event at the server → row in the DOM, max", [
        latency(activity.inDom, 100),
        latency(session.inDom, 100),
      ]),
      row("events measured", [String(activity.inDom.length), String(session.inDom.length)]),
      row("its REST read, median (activity: live part; session: its turns)", [
        `${liveRead.toFixed(0)} ms`,
        `${sessionRead.toFixed(0)} ms`,
      ]),
      row("activity: a page of 50 finished turns, median", [`${finishedRead.toFixed(0)} ms`, ""]),
    ];
    console.log(
      `\nActivity page: ${liveTurns + finishedTurns} turns (${liveTurns} live, ${eventsPerSecond} events/s in all), Chromium, real server on FerretDB\n`,
    );
    console.log(markdownTable(["measure", "activity page", "session page (baseline)"], rows));
  } finally {
    for (const close of closers.reverse()) await close();
    await browser.close();
    await server.close();
    await services.stop();
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * Each live turn sends one event every `liveTurns / eventsPerSecond` s, at its own phase: a
 * tool_start (a probe) then its tool_result, and so on. The server's own activity subscription
 * stamps when the relay handed each probe on.
 */
function startStream(
  server: Awaited<ReturnType<typeof startTestServer>>,
  userId: string,
  turnIds: string[],
  sessionIds: string[],
  holder: Map<string, ScriptedDrone>,
): Stream {
  const relayedAt = new Map<string, number>();
  // The earliest of the two ways the relay hands an event on (a turn's subscribers get it a
  // moment before the activity notices, which wait for the rest of the tick).
  const seen = (probe: string) => {
    if (!relayedAt.has(probe)) relayedAt.set(probe, epochNow());
  };
  const watch = server.context.relay.watchActivity(userId, (notices) => {
    for (const notice of notices) {
      if (notice.tool?.name.startsWith("probe_")) seen(notice.tool.name);
    }
  });
  const subscriptions = turnIds.map((turnId, index) =>
    server.context.relay.subscribe({
      turnId,
      sessionId: sessionIds[index]!,
      after: 0,
      sink: ({ events }) => {
        for (const event of events) {
          if (event.type === "tool_start" && event.data.callId.startsWith("probe_")) {
            seen(event.data.callId);
          }
        }
      },
    }),
  );
  const periodMs = (liveTurns / eventsPerSecond) * 1000;
  let stopped = false;
  const loops = turnIds.map(async (turnId, index) => {
    await sleep((periodMs * index) / turnIds.length);
    const drone = holder.get(turnId)!;
    let step = 0;
    let next = performance.now();
    while (!stopped) {
      const probe = `probe_${index}_${step >> 1}`;
      const event: AgentEvent =
        step % 2 === 0
          ? agentEvent("tool_start", { callId: probe, tool: probe, params: { step } })
          : agentEvent("tool_result", { callId: probe, tool: probe, ok: true, summary: "ok" });
      // One batch in flight per turn, as a drone streams.
      await drone.stream(turnId, [event]);
      step += 1;
      next += periodMs;
      await sleep(Math.max(0, next - performance.now()));
    }
  });
  return {
    relayedAt,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      watch.close();
      for (const subscription of subscriptions) subscription.close();
    },
  };
}

/**
 * A call of `fn` with `argument`, as source text for the page: tsx wraps functions in its
 * `__name` helper, which does not exist there.
 */
function inPage(fn: (argument: never) => unknown, argument: unknown): string {
  return `var __name = (target) => target; (${fn.toString()})(${JSON.stringify(argument)});`;
}

async function measurePage(
  page: Page,
  url: string,
  mode: "activity" | "session",
  stream: Stream,
  measureMs: number,
) {
  const fresh = await page.context().newPage();
  await fresh.addInitScript({ content: inPage(instrument, mode) });
  await fresh.goto(url);
  await fresh.waitForFunction(
    () => (window as unknown as { bench: { allRows(): number | null } }).bench.allRows() !== null,
    undefined,
    { timeout: 60_000 },
  );
  await sleep(warmupMs);
  const from = epochNow();
  await sleep(measureMs);
  const until = epochNow();
  const result = await fresh.evaluate(() => {
    const bench = (
      window as unknown as {
        bench: {
          shown(): Array<{ key: string; inDom: number; painted?: number }>;
          firstRow(): number | null;
          allRows(): number | null;
        };
      }
    ).bench;
    return { shown: bench.shown(), firstRow: bench.firstRow(), allRows: bench.allRows() };
  });
  const startup = (await fresh.evaluate(inPage(readStartup, result.firstRow))) as ReturnType<
    typeof readStartup
  >;
  const inDom: number[] = [];
  const painted: number[] = [];
  for (const entry of result.shown) {
    const relayed = stream.relayedAt.get(entry.key);
    if (relayed === undefined || relayed < from || relayed > until) continue;
    inDom.push(entry.inDom - relayed);
    if (entry.painted !== undefined) painted.push(entry.painted - relayed);
  }
  if (mode === "activity") await screenshot(fresh, "bench-activity-1000");
  await fresh.close();
  return { firstRow: result.firstRow, allRows: result.allRows, inDom, painted, startup };
}

/**
 * Where the time to the first row went, from the page's own navigation and resource timings:
 * the document's answer, the scripts (and their size), the app's first API request, and the
 * last API answer before the first row (the page's reads it waited for).
 */
function readStartup(firstRow: number | null) {
  // The page's own clock (this runs in the page), not the node:perf_hooks one imported above.
  const { performance } = globalThis;
  const navigation = performance.getEntriesByType("navigation")[0] as
    | PerformanceNavigationTiming
    | undefined;
  const resources = performance.getEntriesByType("resource") as PerformanceResourceTiming[];
  const scripts = resources.filter((entry) => entry.initiatorType === "script");
  const api = resources.filter((entry) => new URL(entry.name).pathname.startsWith("/api/"));
  const before = api.filter((entry) => firstRow === null || entry.responseEnd <= firstRow);
  const latest = (entries: PerformanceResourceTiming[]) =>
    entries.length === 0 ? null : Math.max(...entries.map((entry) => entry.responseEnd));
  return {
    documentAnswered: navigation?.responseEnd ?? null,
    scriptsLoaded: latest(scripts),
    scriptBytes: scripts.reduce((sum, entry) => sum + entry.encodedBodySize, 0),
    firstRequest: api.length === 0 ? null : Math.min(...api.map((entry) => entry.startTime)),
    readsAnswered: latest(before),
    readsBeforeRow: before.map((entry) => new URL(entry.name).pathname).join(" "),
  };
}

await main();
