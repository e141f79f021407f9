// The per-file setup of the server's integration tests: one server instance with its own database,
// and the scripted drones the file connects, all closed after the file. Uses vitest hooks, so it is
// not part of `@gadget/server/testing` (benchmarks and other packages import that outside vitest).
import { afterAll, beforeAll, inject } from "vitest";
import type { ServerConfig } from "../config.ts";
import type { GadgetServer } from "../server.ts";
import type { ScriptedDrone } from "./scripted-drone.ts";
import { startTestServer } from "./test-server.ts";

export interface TestServerFixture {
  /** The file's server; available from the first test on. */
  readonly server: GadgetServer;
  /** Drones pushed here are closed after the file. */
  readonly drones: ScriptedDrone[];
}

/**
 * Starts a server before the file's tests and stops it (dropping its database) after them.
 * @example const fixture = useTestServer({ droneGraceMs: 1_200 }); … fixture.server.url
 */
export function useTestServer(options: Partial<ServerConfig> = {}): TestServerFixture {
  let server: GadgetServer | undefined;
  const drones: ScriptedDrone[] = [];
  beforeAll(async () => {
    server = await startTestServer({
      mongoUrl: inject("mongoUrl"),
      redisUrl: inject("redisUrl"),
      ...options,
    });
  });
  afterAll(async () => {
    for (const drone of drones) drone.close();
    await server?.context.models.User.db.dropDatabase();
    await server?.close();
  });
  return {
    get server() {
      if (!server) throw new Error("the test server starts in beforeAll; use it inside tests");
      return server;
    },
    drones,
  };
}
