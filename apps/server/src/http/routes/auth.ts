// Signup, login (rate-limited per email and per IP) and /api/me.

import { isDuplicateKeyError } from "@gadget/db";
import { loginBodySchema, parseOrThrow, signupBodySchema, UserError } from "@gadget/protocol";
import type { FastifyPluginAsync } from "fastify";
import type { Types } from "mongoose";
import { requireUser } from "../../auth/authenticate.ts";
import { dummyPasswordHash, hashPassword, verifyPassword } from "../../auth/passwords.ts";
import { limit } from "../../auth/rate-limit.ts";
import type { ServerContext } from "../../context.ts";
import { randomSecret, sha256 } from "../../crypto/tokens.ts";
import { toUser } from "../../serialize.ts";

export function authRoutes(context: ServerContext): FastifyPluginAsync {
  const { models, redis, config } = context;
  const rateLimited = async (kind: string, email: string, ip: string) => {
    const { max, windowMs } = config.loginRateLimit;
    await limit(redis, `${config.redisPrefix}:rl:${kind}:ip:${ip}`, max * 5, windowMs);
    if (email) await limit(redis, `${config.redisPrefix}:rl:${kind}:email:${email}`, max, windowMs);
  };
  const issueToken = async (userId: Types.ObjectId) => {
    const token = randomSecret("gat");
    const tokenHash = sha256(token);
    await models.ApiToken.create({ _id: tokenHash, user: userId, tokenHash });
    return token;
  };

  return async (app) => {
    app.post("/auth/signup", async (request, reply) => {
      await rateLimited("signup", "", request.ip);
      const body = parseOrThrow(signupBodySchema, request.body, "signup");
      const passwordHash = await hashPassword(body.password);
      const user = await models.User.create({
        email: body.email,
        name: body.name ?? body.email.split("@")[0] ?? body.email,
        passwordHash,
      }).catch((error: unknown) => {
        if (isDuplicateKeyError(error)) {
          throw new UserError(
            "conflict",
            "An account with this email already exists; log in instead",
            {
              details: [{ path: "email", message: "already registered" }],
            },
          );
        }
        throw error;
      });
      const token = await issueToken(user._id);
      reply.status(201).send({ user: toUser(user), token });
    });

    app.post("/auth/login", async (request) => {
      const email = (request.body as { email?: unknown } | undefined)?.email;
      await rateLimited("login", typeof email === "string" ? email.toLowerCase() : "", request.ip);
      const body = parseOrThrow(loginBodySchema, request.body, "login");
      const user = await models.User.findOne({ email: body.email }).lean();
      const valid = await verifyPassword(
        body.password,
        user?.passwordHash ?? (await dummyPasswordHash),
      );
      if (!user || !valid) throw new UserError("unauthorized", "Wrong email or password");
      return { user: toUser(user), token: await issueToken(user._id) };
    });

    app.get("/me", async (request) => {
      const userId = await requireUser(context, request);
      const user = await models.User.findById(userId).lean();
      if (!user) throw new UserError("unauthorized", "Invalid token: log in again");
      return { user: toUser(user) };
    });
  };
}
