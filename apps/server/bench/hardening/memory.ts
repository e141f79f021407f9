// (b) The server's memory under each finding's attack, on a fresh process of each build.
import { sleep } from "@gadget/testkit/measure";
import type { Redis } from "ioredis";
import {
  type AttackResult,
  bigHandshakeAttacker,
  bigLoginAttacker,
  type Finding,
  leakySubscriberAttacker,
  liveSubscriptions,
  outcomeSummary,
  providerCheckAttacker,
  startEndlessProvider,
  underAttack,
} from "./attacks.ts";
import {
  attackClients,
  attackSeconds,
  type Build,
  type Env,
  mib,
  providerBytesPerSecond,
  readings,
  rows,
  startBuild,
} from "./harness.ts";

export async function benchMemory(
  env: Env,
  builds: Build[],
  redis: Redis,
  onlyFinding: number | null,
): Promise<void> {
  const provider = await startEndlessProvider();
  try {
    const findings: Finding[] = [
      {
        id: 1,
        benchmark: `Finding 1: ${attackClients} users checking a loopback provider whose model list never ends (${providerBytesPerSecond / 1024 / 1024} MiB/s per connection), ${attackSeconds} s`,
        attacker: (build, server) =>
          providerCheckAttacker(server.url, build.fixtures!.checkUsers, provider.baseUrl),
      },
      {
        id: 3,
        benchmark: `Finding 3: ${attackClients} clients logging in with a 10 MiB email (a new one each time), unauthenticated, ${attackSeconds} s`,
        measuresRedis: true,
        attacker: (_build, server) => bigLoginAttacker(server.url),
      },
      {
        id: 4,
        benchmark: `Finding 4: ${attackClients} clients opening Socket.IO handshakes with 15 MiB of auth, on /ide and on the drones' path, unauthenticated, ${attackSeconds} s`,
        attacker: (build, server) => bigHandshakeAttacker(server.url, build.drone),
      },
      {
        id: 5,
        benchmark: `Finding 5: ${attackClients} clients subscribing twice to a turn on /ide and leaving at once, and opening its SSE stream and aborting within 4 ms, ${attackSeconds} s`,
        attacker: (build, server) =>
          leakySubscriberAttacker(
            server.url,
            build.fixtures!.watched.user.token!,
            build.fixtures!.watched.turnId,
          ),
        after: async (server, result) => {
          await sleep(2_000);
          result.liveSubscriptions = await liveSubscriptions(server.url);
        },
      },
    ];
    for (const finding of findings.filter((item) => !onlyFinding || item.id === onlyFinding)) {
      const results = new Map<string, AttackResult>();
      for (const build of builds) {
        console.error(`memory: finding ${finding.id} on ${build.label}`);
        // A fresh process per attack: what one attack leaves behind does not start the next.
        const server = await startBuild(env, build);
        try {
          await sleep(1_000);
          const result = await underAttack(
            env,
            server,
            finding.measuresRedis ? redis : null,
            finding.attacker(build, server),
          );
          await finding.after?.(server, result);
          results.set(build.label, result);
        } finally {
          await server.stop();
        }
      }
      reportFinding(finding, results.get("this build")!, results.get("before"));
    }
  } finally {
    await provider.close();
  }
}

function heapShown(result: AttackResult): string {
  const shown = (value: number | null) => (value === null ? "?" : mib(value));
  return `${shown(result.heap.beforeMb)} → ${shown(result.heap.afterMb)} MiB`;
}

function reportFinding(finding: Finding, current: AttackResult, before: AttackResult | undefined) {
  const rss = (result: AttackResult | undefined) =>
    result
      ? `${mib(result.startMb)} / ${mib(result.maxMb)} / ${mib(result.endMb)}${result.stoppedEarly ? ` (${result.stoppedEarly})` : ""}; V8 heap ${heapShown(result)}; ${outcomeSummary(result.outcomes)}${result.liveSubscriptions === null ? "" : `; live subscriptions after: ${result.liveSubscriptions}`}`
      : "n/a";
  rows.push({
    benchmark: finding.benchmark,
    measure: "server RSS start / max / end (MiB)",
    current: rss(current),
    before: rss(before),
    target: "back to its start",
  });
  if (finding.measuresRedis) {
    const redisShown = (result: AttackResult | undefined) =>
      result?.redis
        ? `${mib(result.redis.beforeMb)} → ${mib(result.redis.afterMb)} (max ${mib(result.redis.maxMb)})`
        : "n/a";
    rows.push({
      benchmark: "",
      measure: "Redis `used_memory` before → after (MiB)",
      current: redisShown(current),
      before: redisShown(before),
      target: "flat",
    });
  }
  const growth = (result: AttackResult) => result.maxMb - result.startMb;
  // "Bounded" for this reading: after a full collection the heap holds at most 16 MiB more than
  // before the attack (RSS keeps what the allocator took at the peak; the heap shows what stays).
  const ended = current.endMb - current.startMb;
  const heapGrowth = (current.heap.afterMb ?? Number.NaN) - (current.heap.beforeMb ?? Number.NaN);
  const bounded = heapGrowth <= 16;
  let reading = `finding ${finding.id}: this build's RSS peaked ${mib(growth(current))} MiB above its start and ended ${mib(Math.abs(ended))} MiB ${ended >= 0 ? "above" : "below"} it (${bounded ? "bounded" : "not bounded"}), V8 heap ${heapShown(current)}`;
  if (current.redis) {
    reading += `, Redis ${mib(current.redis.afterMb - current.redis.beforeMb)} MiB`;
  }
  if (before) {
    reading += `; the build before peaked ${mib(growth(before))} MiB above its start and ended ${mib(before.endMb - before.startMb)} MiB above it${before.stoppedEarly ? ` (${before.stoppedEarly})` : ""}, V8 heap ${heapShown(before)}`;
    if (before.redis) {
      reading += `, Redis +${mib(before.redis.maxMb - before.redis.beforeMb)} MiB at most`;
    }
  }
  readings.push(`${reading}.`);
}
