// One-time invites for GADGET_SIGNUP=invite: `gadget-code invite create` prints a signup link.
import type { Models } from "@gadget/db";
import { randomSecret, sha256 } from "../crypto/tokens.ts";

/**
 * Makes an invite good for one signup within `days`; only its hash is stored.
 * @example const { code } = await createInvite(models, 7); console.log(`${url}/signup?invite=${code}`);
 */
export async function createInvite(
  models: Models,
  days: number,
): Promise<{ code: string; expiresAt: Date }> {
  const code = randomSecret("gdi");
  const expiresAt = new Date(Date.now() + days * 24 * 60 * 60 * 1000);
  await models.Invite.create({ _id: sha256(code), expiresAt, usedAt: null, createdAt: new Date() });
  return { code, expiresAt };
}
