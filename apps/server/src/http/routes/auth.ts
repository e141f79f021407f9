// Signup (open, by invite, or closed) and login (slowed per account and address, never locked for
// the owner), served to anyone; logout, the user's sign-ins and /api/me, served to the user.
import { isDuplicateKeyError, type Models } from "@gadget/db";
import { rest, UserError } from "@gadget/protocol";
import type { FastifyRequest } from "fastify";
import { bearerToken } from "../../auth/authenticate.ts";
import { signInChecked } from "../../auth/login.ts";
import { dummyPasswordHash, hashPassword, verifyPassword } from "../../auth/passwords.ts";
import type { RateLimits } from "../../auth/rate-limit.ts";
import type { SignIns } from "../../auth/sign-ins.ts";
import { describeUserAgent } from "../../auth/user-agent.ts";
import type { ResolvedConfig } from "../../config.ts";
import { sha256 } from "../../crypto/tokens.ts";
import { toUser } from "../../serialize.ts";
import { type ContractApp, serve } from "../contract.ts";
import { userOf } from "../scopes.ts";

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

/** Signup and login: the address is counted, and a closed signup refused, before the body is. */
export function accountRoutes(app: ContractApp, dependencies: AuthRouteDependencies): void {
  const { models, config, limits, signIns } = dependencies;
  const cost = config.passwordCost;
  const { max, windowMs } = config.loginRateLimit;

  /** The address is counted, and a closed signup refused, before the body is looked at. */
  const beforeSignup = async (request: FastifyRequest) => {
    await limits.count("signup-ip", [request.ip], max * 10, windowMs);
    if (config.signup === "closed") {
      throw new UserError(
        "forbidden",
        "Signup is closed on this server: an administrator creates accounts",
      );
    }
  };
  serve(
    app,
    rest.accounts.signup,
    async (request, reply) => {
      const body = request.body;
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
      const token = await signIns.issue(user._id, describeUserAgent(request.headers["user-agent"]));
      return reply.status(201).send({ user: toUser(user), token });
    },
    { preValidation: beforeSignup },
  );

  /** The address is counted before the body is looked at; the account, once it is valid. */
  const beforeLogin = async (request: FastifyRequest) => {
    await limits.count("login-ip", [request.ip], max * 10, windowMs);
  };
  serve(
    app,
    rest.accounts.login,
    async (request) => {
      const body = request.body;
      // Validated before anything is keyed by it; keys are hashes.
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
      const device = describeUserAgent(request.headers["user-agent"]);
      const token = await signInChecked(
        { models, signIns },
        { user, password: body.password, device },
        cost,
      );
      return { user: toUser(user), token };
    },
    { preValidation: beforeLogin },
  );
}

/** The signed-in user's own sign-ins. */
export function signInRoutes(app: ContractApp, dependencies: AuthRouteDependencies): void {
  const { models, signIns } = dependencies;

  /** Ends this sign-in: the token stops working and its live connections close. */
  serve(app, rest.accounts.logout, async (request, reply) => {
    await signIns.revoke(userOf(request), sha256(bearerToken(request) ?? ""));
    return reply.status(204).send();
  });

  /** The user's sign-ins (devices, scripts), newest first. */
  serve(app, rest.accounts.signIns, async (request) => {
    const current = sha256(bearerToken(request) ?? "");
    return { signIns: await signIns.list(userOf(request), current) };
  });

  serve(app, rest.accounts.revokeSignIn, async (request, reply) => {
    if (!(await signIns.revoke(userOf(request), request.params.id))) {
      throw new UserError("not_found", "Sign-in not found");
    }
    return reply.status(204).send();
  });

  serve(app, rest.accounts.me, async (request) => {
    const user = await models.User.findById(userOf(request)).lean();
    if (!user) throw new UserError("unauthorized", "Invalid token: log in again");
    return { user: toUser(user) };
  });
}
