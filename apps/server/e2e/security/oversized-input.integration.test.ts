// Findings 3 and 4: large input before authentication — a 10 MiB "email" as a rate-limit key,
// bodies of many MiB on routes that need a few KiB, and 15 MiB Socket.IO handshakes on either path.
import { request as httpRequest } from "node:http";
import {
  DRONE_SOCKET_PATH,
  DRONES_NAMESPACE,
  IDE_NAMESPACE,
  PROTOCOL_VERSION,
} from "@gadget/protocol";
import { io } from "socket.io-client";
import { describe, expect, it } from "vitest";
import { ApiClient, registerDrone, setupWorkspace, signup } from "../../src/testing/api-client.ts";
import { useTestServer } from "../../src/testing/use-test-server.ts";

const fixture = useTestServer();
const MiB = 1024 * 1024;

/** Every key of this server's Redis prefix with its length, largest first. */
async function longestKeys(): Promise<number[]> {
  const { redis, config } = fixture.server.context;
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(
      cursor,
      "MATCH",
      // Its own keys ({prefix}:…) and its queues' ({prefix:bull:…}:…).
      `{${config.redisPrefix}*`,
      "COUNT",
      1000,
    );
    cursor = next;
    keys.push(...found);
  } while (cursor !== "0");
  return keys.map((key) => key.length).sort((a, b) => b - a);
}

describe("finding 3: a 10 MiB email", () => {
  it("never becomes a Redis key: the body is refused before it is parsed", async () => {
    const anonymous = new ApiClient(fixture.server.url);
    const huge = await anonymous.post("/api/auth/login", {
      email: `${"a".repeat(10 * MiB)}@example.com`,
      password: "whatever password",
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe("payload_too_large");
    // Under the body limit but over the schema's: refused before any key is built from it.
    const long = await anonymous.post("/api/auth/login", {
      email: `${"b".repeat(12 * 1024)}@example.com`,
      password: "whatever password",
    });
    expect(long.status).toBe(400);
    // A valid email is counted under a hashed key of fixed length.
    for (let attempt = 0; attempt < 3; attempt++) {
      await anonymous.post("/api/auth/login", {
        email: `${"c".repeat(240)}@x.io`,
        password: "wrong password",
      });
    }
    const [longest = 0] = await longestKeys();
    expect(longest).toBeLessThan(200);
  });
});

describe("finding 4: large bodies before authentication", () => {
  it("refuses an 11.9 MiB login, and more than 1 MiB on JSON routes, with 413", async () => {
    const anonymous = new ApiClient(fixture.server.url);
    const login = await anonymous.request(
      "POST",
      "/api/auth/login",
      JSON.stringify({ email: "x@example.com", password: "p".repeat(11.9 * MiB) }),
    );
    expect(login.status).toBe(413);
    const signupBody = await anonymous.post("/api/auth/signup", {
      email: "y@example.com",
      password: "p".repeat(32 * 1024),
    });
    expect(signupBody.status).toBe(413);

    const user = await signup(fixture.server.url, "bodies");
    const project = await user.post("/api/projects", {
      name: "big",
      gitUrl: "https://example.com/big.git",
      verifyCommands: ["x".repeat(2 * MiB)],
    });
    expect(project.status).toBe(413);
  });

  it("answers a stranger's 10 MiB file write before reading its body", async () => {
    const user = await signup(fixture.server.url, "writer");
    const workspace = await setupWorkspace(user);
    const url = new URL(`/api/projects/${workspace.projectId}/file`, fixture.server.url);
    /** Sends the headers and 1 MiB of a 10 MiB body, then waits: the answer must not need the rest. */
    const started = (authorization?: string) =>
      new Promise<number>((resolve, reject) => {
        const request = httpRequest(url, {
          method: "PUT",
          headers: {
            "content-type": "application/json",
            "content-length": String(10 * MiB),
            ...(authorization ? { authorization } : {}),
          },
        });
        const timer = setTimeout(() => {
          request.destroy();
          reject(new Error("no answer before the body was sent: the server was reading it"));
        }, 3_000);
        request.on("response", (response) => {
          clearTimeout(timer);
          response.resume();
          resolve(response.statusCode ?? 0);
          request.destroy();
        });
        request.on("error", () => undefined);
        request.write(`{"path":"a.txt","content":"${"z".repeat(MiB)}`);
      });
    expect(await started()).toBe(401);
    expect(await started("Bearer gat_forged")).toBe(401);
    // The owner's write is read in full (and relayed: no drone holds it here, so 503).
    const owner = await user.put(url.pathname, { path: "a.txt", content: "z".repeat(10 * MiB) });
    expect(owner.status).toBe(503);
    expect(owner.body.error.code).toBe("no_drone_online");
    const tooBig = await user.put(url.pathname, { path: "a.txt", content: "z".repeat(13 * MiB) });
    expect(tooBig.status).toBe(413);
  });
});

describe("finding 4: 15 MiB Socket.IO handshakes", () => {
  /** Connects and resolves with how the attempt ended. */
  function attempt(
    path: string | undefined,
    namespace: string,
    auth: Record<string, unknown>,
    extraHeaders: Record<string, string> = {},
  ): Promise<{ outcome: "connected" | "refused" | "closed"; message: string; code?: string }> {
    const socket = io(`${fixture.server.url}${namespace}`, {
      ...(path ? { path } : {}),
      auth,
      extraHeaders,
      transports: ["websocket"],
      reconnection: false,
      forceNew: true,
    });
    return new Promise((resolve) => {
      // The first outcome counts; closing the socket afterwards fires "close" too.
      const settle = (result: {
        outcome: "connected" | "refused" | "closed";
        message: string;
        code?: string;
      }) => {
        resolve(result);
        socket.close();
      };
      socket.once("connect", () => settle({ outcome: "connected", message: "" }));
      // Closed by the server before Socket.IO answered (a message over the limit): no error event.
      // ("forced close" is the client's own: it closes the connection before a refusal's event.)
      socket.io.on("close", (reason) => {
        if (reason !== "forced close") settle({ outcome: "closed", message: String(reason) });
      });
      socket.once("connect_error", (error: Error & { data?: { code?: string } }) =>
        settle({
          outcome: error.data?.code ? "refused" : "closed",
          message: error.message,
          ...(error.data?.code ? { code: error.data.code } : {}),
        }),
      );
    });
  }

  it("closes a browser socket whose handshake is 15 MiB, unread", async () => {
    const result = await attempt(undefined, IDE_NAMESPACE, { token: "t".repeat(15 * MiB) });
    expect(result.outcome).toBe("closed");
    // A long token under the message limit is refused by the schema, not looked up.
    const long = await attempt(undefined, IDE_NAMESPACE, { token: "t".repeat(10 * 1024) });
    expect(long).toMatchObject({ outcome: "refused", code: "unauthorized" });
  });

  it("refuses the drones' socket to anyone without a live drone credential, before any message", async () => {
    const handshake = {
      droneId: "0123456789abcdef01234567",
      credential: "c".repeat(15 * MiB),
      protocolVersion: PROTOCOL_VERSION,
      sandbox: { kind: "none", version: null, network: "host" },
    };
    const anonymous = await attempt(DRONE_SOCKET_PATH, DRONES_NAMESPACE, handshake);
    expect(anonymous.outcome).toBe("closed");
    const forged = await attempt(DRONE_SOCKET_PATH, DRONES_NAMESPACE, handshake, {
      authorization: "Drone 0123456789abcdef01234567:gdc_forged",
    });
    expect(forged.outcome).toBe("closed");

    // A real drone's credential opens it; its large messages are then accepted.
    const user = await signup(fixture.server.url, "drone-owner");
    const { droneId, credential } = await registerDrone(user);
    const real = await attempt(
      DRONE_SOCKET_PATH,
      DRONES_NAMESPACE,
      { ...handshake, droneId, credential },
      { authorization: `Drone ${droneId}:${credential}` },
    );
    expect(real.outcome).toBe("connected");
  });

  it("tells a drone of an older protocol, connecting the old way, to upgrade", async () => {
    const user = await signup(fixture.server.url, "old-drone");
    const { droneId, credential } = await registerDrone(user);
    const old = await attempt(undefined, DRONES_NAMESPACE, {
      droneId,
      credential,
      protocolVersion: 2,
      sandbox: { kind: "none", version: null, network: "host" },
    });
    expect(old).toMatchObject({ outcome: "refused", code: "protocol_mismatch" });
    expect(old.message).toMatch(/Install gadget-drone .* from this server/);
  });
});
