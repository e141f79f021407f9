// `gadget-code user create` and `user reset-password`, run as the operator runs them, against the
// database a live server uses: the new user can log in; a reset changes the password and logs the
// user out everywhere; mistakes get a clear message and a non-zero exit.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, inject, it } from "vitest";
import { ApiClient } from "../testing/api-client.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();
const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Runs `gadget-code <args>` with the fixture server's database; `stdin` is written and closed. */
function gadgetCode(
  args: string[],
  stdin = "",
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli.ts", ...args], {
    cwd: serverDir,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      MONGO_URL: fixture.server.context.config.mongoUrl,
      REDIS_URL: inject("redisUrl"),
      GADGET_SECRET: "test-secret-test-secret-test-secret-0123",
    },
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
  });
  child.stderr.on("data", (chunk) => {
    err += chunk;
  });
  child.stdin.end(stdin);
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, out, err })));
}

async function login(email: string, password: string) {
  return new ApiClient(fixture.server.url).post("/api/auth/login", { email, password });
}

// Each case starts the gadget-code CLI (a few seconds each on a busy machine): 90 s a test.
describe("gadget-code user", { timeout: 90_000 }, () => {
  it("creates a user with a generated password that logs in", async () => {
    const created = await gadgetCode([
      "user",
      "create",
      "--email",
      "Grace@Example.com",
      "--name",
      "Grace",
    ]);
    expect(created.err).toBe("");
    expect(created.code).toBe(0);
    expect(created.out).toMatch(
      /^Created user grace@example\.com \([0-9a-f]{24}\)\.\nPassword: \S{16}\n$/,
    );
    const password = /Password: (\S+)/.exec(created.out)![1]!;
    const answer = await login("grace@example.com", password);
    expect(answer.status).toBe(200);
    expect(answer.body.user).toMatchObject({ email: "grace@example.com", name: "Grace" });

    const again = await gadgetCode(["user", "create", "--email", "grace@example.com"]);
    expect(again.code).toBe(1);
    expect(again.err).toContain("A user with the email grace@example.com already exists");
  });

  it("resets a password from stdin and logs the user out everywhere", async () => {
    const created = await gadgetCode(
      ["user", "create", "--email", "linus@example.com", "--password-stdin"],
      "first-password\n",
    );
    expect(created.code).toBe(0);
    expect(created.out).not.toContain("Password:");
    const session = await login("linus@example.com", "first-password");
    const token = session.body.token as string;
    expect((await new ApiClient(fixture.server.url, token).get("/api/me")).status).toBe(200);

    const reset = await gadgetCode(
      ["user", "reset-password", "--email", "linus@example.com", "--password-stdin"],
      "second-password\n",
    );
    expect(reset.code).toBe(0);
    expect(reset.out).toBe("Password of linus@example.com changed; 1 session(s) logged out.\n");
    expect((await new ApiClient(fixture.server.url, token).get("/api/me")).status).toBe(401);
    expect((await login("linus@example.com", "first-password")).status).toBe(401);
    expect((await login("linus@example.com", "second-password")).status).toBe(200);
  });

  it("says what is wrong: unknown user, weak password, missing email, unknown flag", async () => {
    const unknown = await gadgetCode(["user", "reset-password", "--email", "nobody@example.com"]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain("No user with the email nobody@example.com");
    const weak = await gadgetCode(
      ["user", "create", "--email", "weak@example.com", "--password-stdin"],
      "short\n",
    );
    expect(weak.code).toBe(1);
    expect(weak.err).toContain("password: must be at least 8 characters");
    const noEmail = await gadgetCode(["user", "create"]);
    expect(noEmail.code).toBe(1);
    expect(noEmail.err).toContain("--email is required");
    const badFlag = await gadgetCode(["user", "create", "--email", "x@example.com", "--admin"]);
    expect(badFlag.code).toBe(1);
    expect(badFlag.err).toContain("--admin");
  });
});
