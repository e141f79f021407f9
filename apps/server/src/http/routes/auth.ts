// Signup (open, by invite, or closed), login (slowed per account and address, never locked for
// the owner), logout, the user's sign-ins, and /api/me.
import { isDuplicateKeyError, type Models } from "@gadget/db";
import { loginBodySchema, parseOrThrow, signupBodySchema, UserError } from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import { bearerToken, requireUser } from "../../auth/authenticate.ts";
import {
  dummyPasswordHash,
  hashPassword,
  needsRehash,
  verifyPassword,
} from "../../auth/passwords.ts";
import type { RateLimits } from "../../auth/rate-limit.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import type { ResolvedConfig } from "../../config.ts";
import { sha256 } from "../../crypto/tokens.ts";
import { toUser } from "../../serialize.ts";

/** Bodies here are a few fields: anything larger is refused before it is parsed. */
const authBodyLimit = 16 * 1024;

/** The same answer for a taken email as for any other refusal: it does not say which emails exist. */
const cannotSignUp = () =>
  new UserError(
    "signup_failed",
    "Could not create an account with these details. If you already have one, log in.",
  );

export interface AuthRouteDependencies {
  models: Models;
  config: ResolvedConfig;
  limits: RateLimits;
  signIns: SignIns;
}

export function authRoutes(dependencies: AuthRouteDependencies): FastifyPluginAsync {
  const { models, config, limits, signIns } = dependencies;
  const cost = config.passwordCost;

  return async (app) => {
    app.post("/auth/signup", { bodyLimit: authBodyLimit }, async (request, reply) => {
      const { max, windowMs } = config.loginRateLimit;
      await limits.count("signup-ip", [request.ip], max * 10, windowMs);
      if (config.signup === "closed") {
        throw new UserError(
          "forbidden",
          "Signup is closed on this server: an administrator creates accounts",
        );
      }
      const body = parseOrThrow(signupBodySchema, request.body, "signup");
      // An invite is taken before the account is made (one use, even for two racing signups) and
      // given back if the account cannot be made. A bad invite reads like any other refusal.
      const inviteHash = config.signup === "invite" ? sha256(body.invite ?? "") : null;
      if (inviteHash) {
        const taken = await models.Invite.findOneAndUpdate(
          { _id: inviteHash, usedAt: null, expiresAt: { $gt: new Date() } },
          { $set: { usedAt: new Date() } },
        ).lean();
        if (!taken || !body.invite) throw cannotSignUp();
      }
      const passwordHash = await hashPassword(body.password, cost);
      const user = await models.User.create({
        email: body.email,
        name: body.name ?? body.email.split("@")[0] ?? body.email,
        passwordHash,
      }).catch(async (error: unknown) => {
        if (inviteHash) {
          await models.Invite.updateOne({ _id: inviteHash }, { $set: { usedAt: null } });
        }
        if (isDuplicateKeyError(error)) throw cannotSignUp();
        throw error;
      });
      const token = await signIns.issue(user._id);
      reply.status(201).send({ user: toUser(user), token });
    });

    app.post("/auth/login", { bodyLimit: authBodyLimit }, async (request) => {
      const { max, windowMs } = config.loginRateLimit;
      await limits.count("login-ip", [request.ip], max * 10, windowMs);
      // Validated before anything is keyed by it; keys are hashes.
      const body = parseOrThrow(loginBodySchema, request.body, "login");
      await limits.checkLogin(body.email, request.ip, max);
      const user = await models.User.findOne({ email: body.email }).lean();
      const valid = await verifyPassword(
        body.password,
        user?.passwordHash ?? (await dummyPasswordHash(cost)),
      );
      if (!user || !valid) {
        await limits.loginFailed(body.email, request.ip);
        throw new UserError("unauthorized", "Wrong email or password");
      }
      await limits.loginSucceeded(body.email, request.ip);
      if (needsRehash(user.passwordHash, cost)) {
        const stronger = await hashPassword(body.password, cost);
        await models.User.updateOne({ _id: user._id }, { $set: { passwordHash: stronger } });
      }
      return { user: toUser(user), token: await signIns.issue(user._id) };
    });

    /** Ends this sign-in: the token stops working and its live connections close. */
    app.post("/auth/logout", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      await signIns.revoke(userId, sha256(bearerToken(request) ?? ""));
      reply.status(204).send();
    });

    /** The user's sign-ins (devices, scripts), newest first. */
    app.get("/auth/sign-ins", async (request) => {
      const userId = await requireUser(dependencies, request);
      const current = sha256(bearerToken(request) ?? "");
      return { signIns: await signIns.list(userId, current) };
    });

    app.delete("/auth/sign-ins/:id", async (request, reply) => {
      const userId = await requireUser(dependencies, request);
      const id = (request.params as { id?: unknown }).id;
      if (
        typeof id !== "string" ||
        !/^[0-9a-f]{64}$/.test(id) ||
        !(await signIns.revoke(userId, id))
      ) {
        throw new UserError("not_found", "Sign-in not found");
      }
      reply.status(204).send();
    });

    app.get("/me", async (request) => {
      const userId = await requireUser(dependencies, request);
      const user = await models.User.findById(userId).lean();
      if (!user) throw new UserError("unauthorized", "Invalid token: log in again");
      return { user: toUser(user) };
    });
  };
}
