// Admin tasks on accounts, for `gadget-code user …`: the operator's way in when nobody can log in.
import { randomBytes } from "node:crypto";
import { isDuplicateKeyError, type Models } from "@gadget/db";
import { parseOrThrow, signupBodySchema, UserError } from "@gadget/protocol";
import { hashPassword } from "../auth/passwords.ts";

/** A password people can type: 16 characters from 12 random bytes. */
export function generatePassword(): string {
  return randomBytes(12).toString("base64url");
}

/**
 * Creates a user as signup does (same validation, same hash).
 * @example await createUser(models, { email: "ada@example.com", password });
 */
export async function createUser(
  models: Models,
  input: { email: string; password: string; name?: string | undefined },
): Promise<{ id: string; email: string }> {
  const body = parseOrThrow(signupBodySchema, input, "user");
  try {
    const user = await models.User.create({
      email: body.email,
      name: body.name ?? body.email.split("@")[0] ?? body.email,
      passwordHash: await hashPassword(body.password),
    });
    return { id: String(user._id), email: body.email };
  } catch (error) {
    if (isDuplicateKeyError(error)) {
      throw new UserError("conflict", `A user with the email ${body.email} already exists`);
    }
    throw error;
  }
}

/**
 * Sets a new password and logs the user out everywhere (every API token is deleted; the caller
 * closes their live connections with `disconnectSignIns`).
 * @example const { tokensRevoked } = await resetPassword(models, "ada@example.com", password);
 */
export async function resetPassword(
  models: Models,
  email: string,
  password: string,
): Promise<{ id: string; tokensRevoked: number; tokenHashes: string[] }> {
  const body = parseOrThrow(
    signupBodySchema.pick({ email: true, password: true }),
    { email, password },
    "user",
  );
  const user = await models.User.findOne({ email: body.email }).lean();
  if (!user) throw new UserError("not_found", `No user with the email ${body.email}`);
  await models.User.updateOne(
    { _id: user._id },
    { $set: { passwordHash: await hashPassword(body.password) } },
  );
  const tokens = await models.ApiToken.find({ user: user._id }).select({ _id: 1 }).lean();
  const { deletedCount } = await models.ApiToken.deleteMany({ user: user._id });
  return {
    id: String(user._id),
    tokensRevoked: deletedCount,
    tokenHashes: tokens.map((token) => String(token._id)),
  };
}
