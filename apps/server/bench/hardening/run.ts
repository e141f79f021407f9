// Benchmarks of the hardening (the attacker's findings closed), each beside the build before it
// (`beforeCommit`, run from a git worktree) in the same run: (a) what the new checks cost on
// `POST /api/sessions/:id/turns` and on a drone's event batch, the two builds measured in
// alternating rounds; (b) the server's memory while 20 clients attack findings 1, 3, 4 and 5 for
// 30 s each, on a fresh process per attack. Loopback only; every loop is bounded.
// `tsx bench/hardening/run.ts [overhead | finding:<n>]` runs (a) alone, or (b) for one finding.
// BENCH_ATTACK_SECONDS=<s> shortens the attacks (default 30).
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { DRONE_SOCKET_PATH, PROTOCOL_VERSION } from "@gadget/protocol";
import { databaseUrl, findRepoRoot, startServices } from "@gadget/services";
import { now } from "@gadget/testkit/measure";
import { Redis } from "ioredis";
import mongoose from "mongoose";
import { type Build, beforeCommit, prepareBeforeTree, readings, rows } from "./harness.ts";
import { benchMemory } from "./memory.ts";
import { benchOverhead } from "./overhead.ts";

async function main(): Promise<void> {
  const started = now();
  const only = process.argv[2];
  const repoRoot = findRepoRoot();
  const base = await mkdtemp(path.join(tmpdir(), "gadget-bench-hardening-"));
  let beforeTree: Awaited<ReturnType<typeof prepareBeforeTree>> = null;
  let services: Awaited<ReturnType<typeof startServices>> | null = null;
  let serviceKinds = "";
  let redis: Redis | null = null;
  const builds: Build[] = [];
  try {
    services = await startServices({
      rootDir: repoRoot,
      dataDir: path.join(base, "services"),
      mongoUrl: process.env.MONGO_URL,
      redisUrl: process.env.REDIS_URL,
    });
    serviceKinds = `${services.mongoKind} + ${services.redisKind}`;
    console.error(`services: ${serviceKinds}`);
    const env = {
      mongoUrl: services.mongoUrl,
      redisUrl: services.redisUrl,
      diagnosticDir: path.join(base, "diagnostics"),
    };
    await mkdir(env.diagnosticDir);
    redis = new Redis(services.redisUrl);
    beforeTree = await prepareBeforeTree(repoRoot, base);
    const suffix = randomUUID().slice(0, 6);
    builds.push({
      label: "this build",
      serverDirectory: undefined,
      drone: {
        path: DRONE_SOCKET_PATH,
        protocolVersion: PROTOCOL_VERSION,
        authorizationHeader: true,
      },
      name: `bench_hardening_now_${suffix}`,
    });
    if (beforeTree) {
      builds.push({
        label: "before",
        serverDirectory: beforeTree.serverDirectory,
        // Before: drones on Socket.IO's default path, protocol 1, the credential in `auth` only.
        drone: { path: "/socket.io/", protocolVersion: 1, authorizationHeader: false },
        name: `bench_hardening_before_${suffix}`,
      });
    }
    const onlyFinding = only?.startsWith("finding:") ? Number(only.slice(8)) : null;
    await benchOverhead(env, builds, onlyFinding === null);
    if (only !== "overhead") await benchMemory(env, builds, redis, onlyFinding);
    for (const build of builds) {
      const connection = await mongoose
        .createConnection(databaseUrl(env.mongoUrl, build.name))
        .asPromise();
      await connection.dropDatabase();
      await connection.close();
    }
  } finally {
    redis?.disconnect();
    await services?.stop();
    await beforeTree?.remove();
    await rm(base, { recursive: true, force: true });
  }
  const seconds = (now() - started) / 1000;
  console.log(
    `\n## Hardening (issue 25): this build beside ${beforeTree ? `the build before (${beforeCommit.slice(0, 7)})` : "nothing (no worktree: before is n/a)"}, ${serviceKinds}, loopback, ${seconds.toFixed(0)} s\n`,
  );
  console.log(
    `| benchmark | measure | this build | before (${beforeCommit.slice(0, 7)}) | target |`,
  );
  console.log("|---|---|---|---|---|");
  for (const row of rows) {
    console.log(
      `| ${row.benchmark} | ${row.measure} | ${row.current} | ${row.before} | ${row.target} |`,
    );
  }
  console.log("");
  for (const reading of readings) console.log(`- ${reading}`);
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
