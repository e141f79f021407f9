// Web benchmarks: initial JavaScript gzipped (without the lazy editor chunk) against React alone,
// and tool_start-to-row latency in Chromium with 5,000 events in the turn against an empty turn.
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import type { IdeClientToServerEvents, IdeServerToClientEvents, TurnEvent } from "@gadget/protocol";
import { buildApp, launchBrowser, screenshot } from "@gadget/testkit/browser";
import { percentile } from "@gadget/testkit/measure";
import { Server } from "socket.io";
import { webDir } from "../e2e/web-dir.ts";
import { event, longTurn } from "../src/test/events.ts";

const PROBES = 100;
/** Probes sent first and not counted: they pay for the JIT and first layouts. */
const WARMUP = 15;
const PROBE_GAP_MS = 45;
const BIG_TURN = "64b0000000000000000000aa";
const EMPTY_TURN = "64b0000000000000000000bb";

// ---------- bundle size ----------

/** Files loaded before the app runs: the entry script, its modulepreloads and static imports. */
async function initialScripts(
  dir: string,
  htmlFile = "index.html",
): Promise<{ initial: string[]; lazy: string[] }> {
  const html = await readFile(path.join(dir, htmlFile), "utf8");
  const htmlDir = path.posix.dirname(htmlFile);
  const queue = [
    ...html.matchAll(/<script[^>]+type="module"[^>]+src="([^"]+)"/g),
    ...html.matchAll(/<link[^>]+rel="modulepreload"[^>]+href="([^"]+)"/g),
  ].map((match) => {
    const src = match[1]!;
    return src.startsWith("/") ? src.slice(1) : path.posix.normalize(path.posix.join(htmlDir, src));
  });
  const initial = new Set<string>();
  const lazy = new Set<string>();
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (initial.has(file)) continue;
    initial.add(file);
    const code = await readFile(path.join(dir, file), "utf8");
    const base = path.posix.dirname(file);
    for (const match of code.matchAll(
      /\bimport\s*(?:[\w*{}\s,$]*?from\s*)?["'`](\.{1,2}\/[^"'`]+)["'`]/g,
    )) {
      queue.push(path.posix.normalize(path.posix.join(base, match[1]!)));
    }
    for (const match of code.matchAll(/\bimport\(\s*["'`](\.{1,2}\/[^"'`]+)["'`]\s*\)/g)) {
      lazy.add(path.posix.normalize(path.posix.join(base, match[1]!)));
    }
  }
  return { initial: [...initial], lazy: [...lazy].filter((file) => !initial.has(file)) };
}

async function gzipSize(dir: string, files: string[]): Promise<number> {
  let total = 0;
  for (const file of files) total += gzipSync(await readFile(path.join(dir, file))).length;
  return total;
}

async function rawSize(dir: string, files: string[]): Promise<number> {
  let total = 0;
  for (const file of files) total += (await stat(path.join(dir, file))).size;
  return total;
}

// ---------- latency ----------

interface Probe {
  callId: string;
  receivedAt: number;
  inDomAt?: number;
  paintedAt?: number;
}

async function measureLatency(pageDir: string, turns: Map<string, TurnEvent[]>) {
  const index = await readFile(path.join(pageDir, "bench/page/index.html"));
  const http = createServer(async (request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    if (url.pathname === "/" || url.pathname.endsWith(".html")) {
      response.writeHead(200, { "content-type": "text/html" });
      response.end(index);
      return;
    }
    try {
      const body = await readFile(path.join(pageDir, url.pathname));
      const type = url.pathname.endsWith(".css") ? "text/css" : "text/javascript";
      response.writeHead(200, { "content-type": type });
      response.end(body);
    } catch {
      response.writeHead(404);
      response.end();
    }
  });
  const io = new Server<IdeClientToServerEvents, IdeServerToClientEvents>(http);
  const sockets = new Set<import("socket.io").Socket>();
  io.of("/ide").on("connection", (socket) => {
    sockets.add(socket);
    const subscribed = new Set<string>();
    socket.on("subscribe", (request, ack) => {
      ack({ ok: true });
      const turnId = request.turnId ?? "";
      // The page subscribes twice (probe and store); one replay is enough.
      if (subscribed.has(turnId)) return;
      subscribed.add(turnId);
      // As the server replays them: pages of up to 500 events, one message each.
      const replay = (turns.get(turnId) ?? []).filter((item) => item.seq > (request.after ?? 0));
      for (let start = 0; start < replay.length; start += 500) {
        socket.emit("turn_events", {
          turnId,
          sessionId: "64b0000000000000000000cc",
          events: replay.slice(start, start + 500),
        });
      }
    });
    socket.on("disconnect", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const browser = await launchBrowser({ viewport: { width: 1280, height: 900 } });
  const results: Record<string, { inDom: number[]; painted: number[]; replayMs: number | null }> =
    {};
  try {
    for (const [turnId, events] of turns) {
      const { page } = browser;
      await page.goto(`${origin}/bench/page/index.html?turn=${turnId}&events=${events.length}`);
      await page.waitForFunction((count) => window.bench.lastSeq() >= count, events.length, {
        timeout: 120_000,
      });
      if (events.length > 0) {
        await page.waitForFunction(() => window.bench.allAppliedAt !== null, undefined, {
          timeout: 60_000,
        });
      }
      await page.waitForTimeout(300);
      const socket = [...sockets].at(-1)!;
      for (let probe = 1; probe <= WARMUP + PROBES; probe += 1) {
        const seq = events.length + probe;
        socket.emit("turn_events", {
          turnId,
          sessionId: "64b0000000000000000000cc",
          events: [
            event(seq, "tool_start", {
              callId: probe <= WARMUP ? `warmup-${probe}` : `probe-${probe - WARMUP}`,
              tool: "run_command",
              params: { command: `echo probe ${probe}` },
            }),
          ],
        });
        // A little jitter so probes do not line up with the frame clock.
        await new Promise((resolve) => setTimeout(resolve, PROBE_GAP_MS + (probe % 7)));
      }
      await page.waitForFunction(
        (count) =>
          window.bench.probes.filter((probe) => probe.paintedAt !== undefined).length >= count,
        PROBES,
        { timeout: 60_000 },
      );
      const probes = (await page.evaluate(() => window.bench.probes)) as Probe[];
      const replayMs = (await page.evaluate(() =>
        window.bench.allAppliedAt === null ? null : window.bench.allAppliedAt,
      )) as number | null;
      results[turnId] = {
        inDom: probes.map((probe) => probe.inDomAt! - probe.receivedAt),
        painted: probes.map((probe) => probe.paintedAt! - probe.receivedAt),
        replayMs,
      };
      if (events.length > 0) await screenshot(page, "bench-live-turn-5000");
    }
  } finally {
    await browser.close();
    await io.close();
  }
  return results;
}

// ---------- main ----------

async function main() {
  const work = await mkdtemp(path.join(tmpdir(), "gadget-web-bench-"));
  try {
    const appDir = path.join(work, "app");
    const baselineDir = path.join(work, "baseline");
    const pageDir = path.join(work, "page");
    await buildApp(webDir, appDir);
    await buildApp(webDir, baselineDir, { input: path.join(webDir, "bench/baseline/index.html") });
    await buildApp(webDir, pageDir, { input: path.join(webDir, "bench/page/index.html") });

    const app = await initialScripts(appDir);
    // The baseline's index.html sits under bench/baseline/ in its build.
    const baselineFiles = await initialScripts(baselineDir, "bench/baseline/index.html");
    const appInitial = await gzipSize(appDir, app.initial);
    const appLazy = await gzipSize(appDir, app.lazy);
    const baseline = await gzipSize(baselineDir, baselineFiles.initial);

    const big = longTurn(5000);
    const latency = await measureLatency(
      pageDir,
      new Map([
        [EMPTY_TURN, [] as TurnEvent[]],
        [BIG_TURN, big],
      ]),
    );
    const empty = latency[EMPTY_TURN]!;
    const loaded = latency[BIG_TURN]!;
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
    const ms = (value: number) => `${value.toFixed(1)} ms`;

    console.log("\n### @gadget/web benchmarks\n");
    console.log("| measure | value | baseline (same run) | ratio | target |");
    console.log("|---|---|---|---|---|");
    console.log(
      `| initial JS, gzipped (${app.initial.length} file${app.initial.length === 1 ? "" : "s"}, ${kb(await rawSize(appDir, app.initial))} raw) | ${kb(appInitial)} | React + ReactDOM alone: ${kb(baseline)} | ${(appInitial / baseline).toFixed(2)}× | < 300 KB |`,
    );
    console.log(`| lazy chunks (editor), gzipped, not in the above | ${kb(appLazy)} | | | |`);
    console.log(
      `| tool_start → row in DOM, p95, 5,000 events in the turn | ${ms(percentile(loaded.inDom, 95))} | empty turn: ${ms(percentile(empty.inDom, 95))} | ${(percentile(loaded.inDom, 95) / percentile(empty.inDom, 95)).toFixed(2)}× | |`,
    );
    console.log(
      `| tool_start → row painted (next frame), p95, 5,000 events | ${ms(percentile(loaded.painted, 95))} | empty turn: ${ms(percentile(empty.painted, 95))} | ${(percentile(loaded.painted, 95) / percentile(empty.painted, 95)).toFixed(2)}× | < 50 ms |`,
    );
    console.log(
      `| tool_start → row painted, p50, 5,000 events | ${ms(percentile(loaded.painted, 50))} | empty turn: ${ms(percentile(empty.painted, 50))} | | |`,
    );
    console.log(
      `| page load → 5,000 replayed events shown (reload mid-turn) | ${loaded.replayMs === null ? "n/a" : ms(loaded.replayMs)} | | | |`,
    );
    console.log(
      `\n${PROBES} probes per case after ${WARMUP} uncounted warm-up ones, ${PROBE_GAP_MS} ms apart, measured in headless Chromium on the real IdeConnection → TurnStore → TurnPanel pipeline, fed by a Socket.IO server in this process (bench/page).`,
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
