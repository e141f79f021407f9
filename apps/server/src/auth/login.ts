// What a login does once the password checked out: a stronger hash when the cost went up, and a
// sign-in — neither allowed to undo a password reset that landed while the password was checked.
import type { Models } from "@gadget/db";
import { UserError } from "@gadget/protocol";
import type { Types } from "mongoose";
import { sha256 } from "../crypto/tokens.ts";
import { hashPassword, needsRehash, type PasswordCost } from "./passwords.ts";
import type { SignIns } from "./sign-ins.ts";

export interface CheckedLogin {
  /** The user as read before the password was checked. */
  user: { _id: Types.ObjectId; passwordHash: string };
  /** The password that matched `user.passwordHash`. */
  password: string;
  device: string | null;
}

/**
 * Signs in a user whose password matched the hash read before it was checked; answers the token.
 * A reset (`gadget-code-admin reset-password`) in between replaced the hash and revoked every
 * token: the stronger hash is then not written (it would bring the old password back), and the
 * token issued meanwhile is revoked and the login refused as a wrong password would be.
 */
export async function signInChecked(
  parts: { models: Models; signIns: SignIns },
  login: CheckedLogin,
  cost: PasswordCost,
): Promise<string> {
  const { models, signIns } = parts;
  const { user } = login;
  let checked = user.passwordHash;
  if (needsRehash(checked, cost)) {
    const stronger = await hashPassword(login.password, cost);
    const { modifiedCount } = await models.User.updateOne(
      { _id: user._id, passwordHash: checked },
      { $set: { passwordHash: stronger } },
    );
    if (modifiedCount === 1) checked = stronger;
  }
  const token = await signIns.issue(user._id, login.device);
  if (!(await models.User.exists({ _id: user._id, passwordHash: checked }))) {
    await signIns.revoke(String(user._id), sha256(token));
    throw new UserError("unauthorized", "Wrong email or password");
  }
  return token;
}
