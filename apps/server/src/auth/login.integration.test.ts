// A login's last step against the real database: the stronger hash a raised cost asks for, and a
// password reset that lands while the old password is being checked (the reset must win).
import { describe, expect, it } from "vitest";
import { resetPassword } from "../admin/users.ts";
import { ApiClient, signup } from "../testing/api-client.ts";
import { useTestServer } from "../testing/use-test-server.ts";
import { signInChecked } from "./login.ts";
import { hashPassword, verifyPassword } from "./passwords.ts";

const running = useTestServer();
const password = "correct horse battery";
/** The test server's cost (N = 2^14): hashes below it are replaced at login. */
const weaker = { N: 2 ** 12, r: 8, p: 1 };

describe("a login's sign-in", () => {
  it("replaces a hash of a lower cost with one of the server's, and the login's token works", async () => {
    const { models } = running.server.context;
    const user = await signup(running.server.url, "rehash");
    await models.User.updateOne(
      { email: user.email },
      { $set: { passwordHash: await hashPassword(password, weaker) } },
    );
    const login = await new ApiClient(running.server.url).post("/api/auth/login", {
      email: user.email,
      password,
    });
    expect(login.status).toBe(200);
    const stored = await models.User.findOne({ email: user.email }).lean();
    expect(stored?.passwordHash).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifyPassword(password, stored?.passwordHash ?? "")).toBe(true);
    const me = await new ApiClient(running.server.url, login.body.token).get("/api/me");
    expect(me.body.user.email).toBe(user.email);
  });

  it("lets a password reset made while the old password was checked win: no old hash, no token", async () => {
    const { models, signIns } = running.server.context;
    const user = await signup(running.server.url, "reset-race");
    await models.User.updateOne(
      { email: user.email },
      { $set: { passwordHash: await hashPassword(password, weaker) } },
    );
    // The login read the user and checked the old password; then the reset landed.
    const read = await models.User.findOne({ email: user.email }).lean();
    if (!read) throw new Error("the user was not stored");
    await resetPassword(models, user.email, "a brand new passphrase");
    const checked = { user: read, password, device: null };
    await expect(
      signInChecked({ models, signIns }, checked, { N: 2 ** 14, r: 8, p: 1 }),
    ).rejects.toMatchObject({ code: "unauthorized" });

    const stored = await models.User.findOne({ email: user.email }).lean();
    expect(await verifyPassword("a brand new passphrase", stored?.passwordHash ?? "")).toBe(true);
    expect(await verifyPassword(password, stored?.passwordHash ?? "")).toBe(false);
    expect(await models.ApiToken.countDocuments({ user: read._id })).toBe(0);
    const old = await new ApiClient(running.server.url).post("/api/auth/login", {
      email: user.email,
      password,
    });
    expect(old.status).toBe(401);
  });
});
