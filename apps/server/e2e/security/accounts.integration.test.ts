// Finding 8 of the attacker's pass (lockout, enumeration, signup always open) and the weak scrypt
// cost of finding 10, attacked over HTTP: wrong passwords from many addresses (behind a trusted
// proxy, the address is the client's own), signups with taken emails and stolen invites.
import { describe, expect, it } from "vitest";
import { createInvite } from "../../src/admin/invites.ts";
import { createUser } from "../../src/admin/users.ts";
import { costOf, hashPassword } from "../../src/auth/passwords.ts";
import { ApiClient } from "../../src/testing/api-client.ts";
import { useTestServer } from "../../src/testing/use-test-server.ts";

// Two free wrong passwords per (email, address); new hashes at N=2^15 (the rehash test's target).
const open = useTestServer({
  trustProxy: true,
  loginRateLimit: { max: 2, windowMs: 60_000 },
  passwordCost: { N: 2 ** 15, r: 8, p: 1 },
});
const byInvite = useTestServer({ signup: "invite" });
const closed = useTestServer({ signup: "closed" });

const password = "correct horse battery";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let counter = 0;
const freshEmail = (label: string) => `${label}-${process.pid}-${++counter}@example.com`;

/** An auth answer as a client reads it: a token, or an error (typed loosely: tests check it). */
interface AuthAnswer {
  token?: string;
  error: { code: string; message: string; details?: { retryAfterSeconds?: number } };
}

function login(url: string, email: string, secret: string, address?: string) {
  return new ApiClient(url).request<AuthAnswer>(
    "POST",
    "/api/auth/login",
    { email, password: secret },
    address ? { "x-forwarded-for": address } : {},
  );
}

function signupAt(url: string, body: Record<string, unknown>, address?: string) {
  return new ApiClient(url).request<AuthAnswer>(
    "POST",
    "/api/auth/signup",
    body,
    address ? { "x-forwarded-for": address } : {},
  );
}

/** The parts of an answer a client can compare: status and error body. */
const seen = (answer: { status: number; body: unknown }) => ({
  status: answer.status,
  body: answer.body,
});

describe("finding 8: wrong passwords slow the guesser, never lock the owner out", () => {
  it("ten wrong passwords from other addresses do not stop the owner logging in from their own", async () => {
    const url = open.server.url;
    const email = freshEmail("victim");
    expect((await signupAt(url, { email, password }, "198.51.100.20")).status).toBe(201);

    // Ten addresses one guess each, then one address ten guesses in a row.
    for (let index = 1; index <= 10; index++) {
      expect((await login(url, email, "guess-wrong", `203.0.113.${index}`)).status).toBe(401);
    }
    const hammered: number[] = [];
    for (let index = 0; index < 10; index++) {
      hammered.push((await login(url, email, "guess-wrong", "192.0.2.66")).status);
    }
    expect(hammered.slice(0, 2)).toEqual([401, 401]);
    expect(hammered.slice(2).every((status) => status === 429)).toBe(true);

    const owner = await login(url, email, password, "198.51.100.20");
    expect(owner.status).toBe(200);
    expect(owner.body.token).toEqual(expect.any(String));
  });

  it("wrong passwords from one address wait longer and longer, and Retry-After says how long", async () => {
    const url = open.server.url;
    const email = freshEmail("guessed");
    expect((await signupAt(url, { email, password }, "198.51.100.30")).status).toBe(201);
    const attacker = "192.0.2.77";
    expect((await login(url, email, "wrong-1", attacker)).status).toBe(401);
    expect((await login(url, email, "wrong-2", attacker)).status).toBe(401);

    // Each guess past the free ones doubles the wait: 1 s, 2 s, 4 s.
    for (let round = 0; round < 3; round++) {
      const refused = await login(url, email, "wrong-again", attacker);
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe("rate_limited");
      const retryAfter = Number(refused.headers.get("retry-after"));
      expect(retryAfter).toBe(2 ** round);
      expect(refused.body.error.details?.retryAfterSeconds).toBe(retryAfter);
      // While it waits, even the right password is not tried from there (no free oracle).
      if (round === 0) expect((await login(url, email, password, attacker)).status).toBe(429);
      if (round < 2) {
        await sleep(retryAfter * 1000 + 100);
        expect((await login(url, email, "wrong-after-wait", attacker)).status).toBe(401);
      }
    }
    // The owner, at their own address, is not slowed at all.
    expect((await login(url, email, password, "198.51.100.30")).status).toBe(200);
  });
});

describe("finding 8: signup says nothing about who has an account, and can be closed", () => {
  it("signing up with a taken email answers exactly like a bad invite, and never says it exists", async () => {
    const { models } = byInvite.server.context;
    const email = freshEmail("taken");
    const first = await createInvite(models, 1);
    expect(
      (await signupAt(byInvite.server.url, { email, password, invite: first.code })).status,
    ).toBe(201);

    const spare = await createInvite(models, 1);
    const taken = await signupAt(byInvite.server.url, {
      email: email.toUpperCase(),
      password,
      invite: spare.code,
    });
    const badInvite = await signupAt(byInvite.server.url, {
      email: freshEmail("nobody"),
      password,
      invite: "gdi_made-up-invite",
    });
    const noInvite = await signupAt(byInvite.server.url, { email: freshEmail("bare"), password });
    expect(seen(taken)).toEqual(seen(badInvite));
    expect(seen(noInvite)).toEqual(seen(badInvite));
    expect(taken.status).toBe(400);
    expect(taken.body.error.code).toBe("signup_failed");
    expect(JSON.stringify(taken.body)).not.toMatch(/exist|taken|already registered|in use/i);

    // On an open server too, the same words.
    const openEmail = freshEmail("taken-open");
    expect((await signupAt(open.server.url, { email: openEmail, password })).status).toBe(201);
    const openTaken = await signupAt(open.server.url, { email: openEmail, password });
    expect(seen(openTaken)).toEqual(seen(badInvite));

    // The invite spent on the refused signup was given back.
    const later = await signupAt(byInvite.server.url, {
      email: freshEmail("later"),
      password,
      invite: spare.code,
    });
    expect(later.status).toBe(201);
  });

  it("a closed server refuses every signup; accounts come from the administrator", async () => {
    const url = closed.server.url;
    const email = freshEmail("walk-in");
    const refused = await signupAt(url, { email, password });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("forbidden");
    expect(await closed.server.context.models.User.countDocuments({ email })).toBe(0);
    expect((await login(url, email, password)).status).toBe(401);

    const made = await createUser(closed.server.context.models, {
      email: freshEmail("made"),
      password,
    });
    expect((await login(url, made.email, password)).status).toBe(200);
  });

  it("an invite server takes each invite once: reused, expired and raced invites make one account", async () => {
    const url = byInvite.server.url;
    const { models } = byInvite.server.context;
    const invite = await createInvite(models, 1);
    expect(
      (await signupAt(url, { email: freshEmail("first"), password, invite: invite.code })).status,
    ).toBe(201);
    const reused = await signupAt(url, {
      email: freshEmail("second"),
      password,
      invite: invite.code,
    });
    expect(reused.status).toBe(400);
    expect(reused.body.error.code).toBe("signup_failed");

    const expired = await createInvite(models, -1);
    const late = await signupAt(url, { email: freshEmail("late"), password, invite: expired.code });
    expect(late.status).toBe(400);

    const contested = await createInvite(models, 1);
    const racers = [freshEmail("racer-a"), freshEmail("racer-b"), freshEmail("racer-c")];
    const answers = await Promise.all(
      racers.map((email) => signupAt(url, { email, password, invite: contested.code })),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 400, 400]);
    expect(await models.User.countDocuments({ email: { $in: racers } })).toBe(1);
  });
});

describe("finding 10: password hashes at OWASP's cost, old ones raised at the next login", () => {
  it("a user hashed at N=2^14 is rehashed at the server's cost on login and still logs in", async () => {
    const url = open.server.url;
    const { models } = open.server.context;
    const email = freshEmail("old-hash");
    await models.User.create({
      email,
      name: "Old",
      passwordHash: await hashPassword(password, { N: 2 ** 14, r: 8, p: 1 }),
    });
    const before = await models.User.findOne({ email }).lean();
    expect(costOf(before!.passwordHash)).toEqual({ N: 2 ** 14, r: 8, p: 1 });

    // A wrong password changes nothing.
    expect((await login(url, email, "not-the-password", "198.51.100.40")).status).toBe(401);
    expect((await models.User.findOne({ email }).lean())!.passwordHash).toBe(before!.passwordHash);

    expect((await login(url, email, password, "198.51.100.40")).status).toBe(200);
    const after = await models.User.findOne({ email }).lean();
    expect(after!.passwordHash).toMatch(/^scrypt\$32768\$8\$1\$[\w-]+\$[\w-]+$/);
    expect((await login(url, email, password, "198.51.100.40")).status).toBe(200);
    // Rehashed once: a hash at the server's cost is kept.
    expect((await models.User.findOne({ email }).lean())!.passwordHash).toBe(after!.passwordHash);

    // New accounts start at the server's cost; an admin-made one at the default, 2^17.
    const newEmail = freshEmail("new-hash");
    expect((await signupAt(url, { email: newEmail, password }, "198.51.100.41")).status).toBe(201);
    const created = await models.User.findOne({ email: newEmail }).lean();
    expect(costOf(created!.passwordHash)?.N).toBe(2 ** 15);
    const made = await createUser(models, { email: freshEmail("admin-made"), password });
    const adminMade = await models.User.findOne({ email: made.email }).lean();
    expect(costOf(adminMade!.passwordHash)?.N).toBe(2 ** 17);
  });
});
