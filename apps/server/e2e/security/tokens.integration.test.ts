// Finding 6 of the attacker's pass: tokens never expired, could not be revoked by their user, and
// an /ide socket opened with a revoked token kept receiving the user's updates. Attacked from the
// outside: REST calls, /ide sockets, and the admin's password reset run as the CLI runs it.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { disconnectSignIns } from "../../src/admin/disconnect.ts";
import { resetPassword } from "../../src/admin/users.ts";
import {
  ApiClient,
  IdeClient,
  setupWorkspace,
  signup,
  waitFor,
} from "../../src/testing/api-client.ts";
import { useTestServer } from "../../src/testing/use-test-server.ts";

// Cheap hashes and a generous login limit: one test logs in 105 times from one address.
const fixture = useTestServer({
  passwordCost: { N: 2 ** 10, r: 8, p: 1 },
  loginRateLimit: { max: 50, windowMs: 60_000 },
});
// Tokens that die after 1.5 s without use (their lastUsedAt is written every 0.15 s at most).
const lifetimeMs = 1_500;
const shortLived = useTestServer({
  passwordCost: { N: 2 ** 10, r: 8, p: 1 },
  tokenTtlDays: lifetimeMs / 86_400_000,
});

const password = "correct horse battery";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** A second sign-in of the same user, as from another device. */
async function loginAgain(url: string, email: string): Promise<ApiClient> {
  const answer = await new ApiClient(url).post("/api/auth/login", { email, password });
  expect(answer.status).toBe(200);
  return new ApiClient(url, answer.body.token);
}

/** An /ide socket that records every event it hears and how it was disconnected. */
async function listeningSocket(url: string, token: string) {
  const client = await IdeClient.connect(url, token);
  const heard: string[] = [];
  client.socket.onAny((event: string) => heard.push(event));
  const disconnected = new Promise<string>((resolve) => client.socket.once("disconnect", resolve));
  return { client, heard, disconnected };
}

/** Resolves with the reason, or "still connected" after `ms`. */
function within(disconnected: Promise<string>, ms: number): Promise<string> {
  return Promise.race([disconnected, sleep(ms).then(() => "still connected")]);
}

describe("finding 6: tokens expire, and their user can end them", () => {
  it("a stolen token left unused stops working after its lifetime, while one in use keeps working", async () => {
    const url = shortLived.server.url;
    const owner = await signup(url, "sliding");
    const idle = await loginAgain(url, owner.email);
    // Used every 0.25 s for 1.5 lifetimes: the expiry slides along.
    const started = Date.now();
    while (Date.now() - started < lifetimeMs * 1.5) {
      expect((await owner.get("/api/me")).status).toBe(200);
      await sleep(250);
    }
    expect((await owner.get("/api/me")).status).toBe(200);
    // The other sign-in was not used for as long: it is refused, and its row is gone.
    const refused = await idle.get("/api/me");
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe("unauthorized");
    const row = await shortLived.server.context.models.ApiToken.findById(
      sha256(idle.token!),
    ).lean();
    expect(row).toBeNull();
    await expect(IdeClient.connect(url, idle.token!)).rejects.toThrow(/expired|invalid/i);

    // And the one in use dies the same way once it is left alone.
    await sleep(lifetimeMs + 400);
    expect((await owner.get("/api/me")).status).toBe(401);
  });

  it("logout ends the token at once and closes the /ide socket opened with it", async () => {
    const url = fixture.server.url;
    const owner = await signup(url, "logout");
    const workspace = await setupWorkspace(owner);
    const laptop = await loginAgain(url, owner.email);
    const stolen = await listeningSocket(url, owner.token!);
    const other = await listeningSocket(url, laptop.token!);

    const loggedOut = await owner.post("/api/auth/logout");
    expect(loggedOut.status).toBe(204);
    expect(await within(stolen.disconnected, 3_000)).toBe("io server disconnect");
    expect((await owner.get("/api/me")).status).toBe(401);
    await expect(IdeClient.connect(url, owner.token!)).rejects.toThrow(/expired|invalid/i);

    // Work of the same user goes on from the other sign-in; the logged-out socket hears none of it.
    const heardBefore = stolen.heard.length;
    const turn = await laptop.post(`/api/sessions/${workspace.sessionId}/turns`, {
      prompt: "after logout",
      providerId: workspace.providerId,
    });
    expect(turn.status).toBe(202);
    await waitFor(
      () => other.heard.includes("turn_updates"),
      5_000,
      "turn_updates on the other sign-in",
    );
    await sleep(300);
    expect(stolen.heard.length).toBe(heardBefore);
    expect(stolen.client.socket.connected).toBe(false);
    expect(other.client.socket.connected).toBe(true);
    expect((await laptop.get("/api/me")).status).toBe(200);
    other.client.close();
  });

  it("revoking a lost device's sign-in from another device closes that device's socket", async () => {
    const url = fixture.server.url;
    const owner = await signup(url, "lost-device");
    const lost = await loginAgain(url, owner.email);
    const lostSocket = await listeningSocket(url, lost.token!);
    const ownSocket = await listeningSocket(url, owner.token!);

    const listed = await owner.get("/api/auth/sign-ins");
    expect(listed.status).toBe(200);
    const target = listed.body.signIns.find(
      (signIn: { id: string; current: boolean }) => !signIn.current,
    );
    expect(target).toBeDefined();

    // Another user cannot end it, whatever id they send.
    const stranger = await signup(url, "stranger");
    expect((await stranger.delete(`/api/auth/sign-ins/${target.id}`)).status).toBe(404);
    expect((await lost.get("/api/me")).status).toBe(200);

    expect((await owner.delete(`/api/auth/sign-ins/${target.id}`)).status).toBe(204);
    expect(await within(lostSocket.disconnected, 3_000)).toBe("io server disconnect");
    expect((await lost.get("/api/me")).status).toBe(401);
    expect(ownSocket.client.socket.connected).toBe(true);
    expect((await owner.get("/api/me")).status).toBe(200);
    expect((await owner.delete(`/api/auth/sign-ins/${target.id}`)).status).toBe(404);
    ownSocket.client.close();
  });

  // A refused DELETE closed the owner's sockets too, before revoke checked whose sign-in it was.
  it("a stranger who learns a sign-in id can neither end it nor close its sockets", async () => {
    const url = fixture.server.url;
    const owner = await signup(url, "victim-of-id");
    const socket = await listeningSocket(url, owner.token!);
    const stranger = await signup(url, "id-holder");
    expect((await stranger.delete(`/api/auth/sign-ins/${sha256(owner.token!)}`)).status).toBe(404);
    expect(await within(socket.disconnected, 500)).toBe("still connected");
    expect((await owner.get("/api/me")).status).toBe(200);
    socket.client.close();
  });

  it("the sign-ins list marks the current one and never shows a token that could be used", async () => {
    const url = fixture.server.url;
    const owner = await signup(url, "list");
    const phone = await loginAgain(url, owner.email);
    const listed = await phone.get("/api/auth/sign-ins");
    expect(listed.status).toBe(200);
    const signIns = listed.body.signIns as Array<Record<string, unknown>>;
    expect(signIns).toHaveLength(2);
    for (const signIn of signIns) {
      // `device` is a label worked out from the User-Agent ("curl"); the header is not kept.
      expect(Object.keys(signIn).sort()).toEqual([
        "createdAt",
        "current",
        "device",
        "expiresAt",
        "id",
        "lastUsedAt",
      ]);
      expect(String(signIn.device)).not.toContain(phone.token!);
      expect(Date.parse(String(signIn.expiresAt))).toBeGreaterThan(Date.now());
    }
    expect(signIns.filter((signIn) => signIn.current)).toEqual([
      expect.objectContaining({ id: sha256(phone.token!) }),
    ]);
    const text = JSON.stringify(listed.body);
    expect(text).not.toContain(owner.token);
    expect(text).not.toContain(phone.token);
    // An id is no key: sent as a bearer token it is refused, over REST and on /ide.
    const forged = new ApiClient(url, String(signIns[0]!.id));
    expect((await forged.get("/api/me")).status).toBe(401);
    await expect(IdeClient.connect(url, String(signIns[0]!.id))).rejects.toThrow();
    expect((await new ApiClient(url).get("/api/auth/sign-ins")).status).toBe(401);
  });

  it("an admin's password reset closes the user's open sockets at once, from outside the server", async () => {
    const url = fixture.server.url;
    const owner = await signup(url, "reset");
    const laptop = await loginAgain(url, owner.email);
    const first = await listeningSocket(url, owner.token!);
    const second = await listeningSocket(url, laptop.token!);
    const bystander = await signup(url, "bystander");
    const untouched = await listeningSocket(url, bystander.token!);

    // What `gadget-code user reset-password` does: a new hash, the rows gone, then the sockets
    // closed through Redis (the server's own sweep would take 30 s).
    const { config, models } = fixture.server.context;
    const reset = await resetPassword(models, owner.email, "a brand new password");
    expect(reset.tokenHashes.sort()).toEqual([sha256(owner.token!), sha256(laptop.token!)].sort());
    await disconnectSignIns(config.redisUrl, config.redisPrefix, reset.tokenHashes);

    expect(await within(first.disconnected, 2_000)).toBe("io server disconnect");
    expect(await within(second.disconnected, 2_000)).toBe("io server disconnect");
    expect((await owner.get("/api/me")).status).toBe(401);
    expect((await laptop.get("/api/me")).status).toBe(401);
    expect(untouched.client.socket.connected).toBe(true);
    expect((await bystander.get("/api/me")).status).toBe(200);
    untouched.client.close();
  });

  it("logging in 105 times keeps at most 100 sign-ins, dropping the least recently used", async () => {
    const url = fixture.server.url;
    const owner = await signup(url, "many-logins");
    let latest: ApiClient | null = null;
    for (let round = 0; round < 21; round++) {
      const batch = await Promise.all(
        Array.from({ length: 5 }, () => loginAgain(url, owner.email)),
      );
      latest = batch[0]!;
    }
    const rows = await fixture.server.context.models.ApiToken.countDocuments({
      user: owner.userId,
    });
    expect(rows).toBeLessThanOrEqual(100);
    const listed = await latest!.get("/api/auth/sign-ins");
    expect(listed.status).toBe(200);
    expect(listed.body.signIns.length).toBeLessThanOrEqual(100);
    expect((await latest!.get("/api/me")).status).toBe(200);
    // The signup's token, never used since, was the first to go.
    expect((await owner.get("/api/me")).status).toBe(401);
  });
});
