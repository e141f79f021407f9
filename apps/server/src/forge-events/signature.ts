// Whether a webhook delivery came from the project's forge: GitHub and Gitea sign the raw body
// with HMAC-SHA256 under the secret (`X-Hub-Signature-256: sha256=<hex>`; Gitea also sends the
// bare hex as `X-Gitea-Signature`); GitLab sends the secret itself as `X-Gitlab-Token`. Compared
// in constant time. Also the headers that name the event and the delivery, per forge.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { ForgeKind } from "@gadget/protocol";

export type HookHeaders = Record<string, string | string[] | undefined>;

function header(headers: HookHeaders, name: string): string | null {
  const value = headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  return typeof text === "string" && text.length > 0 && text.length <= 512 ? text : null;
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * The hex HMAC-SHA256 of the raw body, as GitHub and Gitea send it.
 * @example const header = `sha256=${forgeSignature(secret, rawBody)}`;
 */
export function forgeSignature(secret: string, rawBody: string): string {
  return createHmac("sha256", secret).update(rawBody, "utf8").digest("hex");
}

/** Whether the delivery carries the right signature (GitLab: token) for `secret`. */
export function verifyForgeSignature(
  kind: ForgeKind,
  headers: HookHeaders,
  rawBody: string,
  secret: string,
): boolean {
  if (kind === "gitlab") {
    const token = header(headers, "x-gitlab-token");
    return token !== null && sameText(token, secret);
  }
  const expected = forgeSignature(secret, rawBody);
  const hub = header(headers, "x-hub-signature-256");
  if (hub !== null) return sameText(hub.toLowerCase(), `sha256=${expected}`);
  const gitea = kind === "gitea" ? header(headers, "x-gitea-signature") : null;
  return gitea !== null && sameText(gitea.toLowerCase(), expected);
}

/** The event's name as the forge's header says it (`issues`, `issue_comment`, `Note Hook`…). */
export function forgeEventName(kind: ForgeKind, headers: HookHeaders): string {
  const names =
    kind === "gitlab"
      ? ["x-gitlab-event"]
      : kind === "gitea"
        ? ["x-gitea-event", "x-github-event"]
        : ["x-github-event"];
  for (const name of names) {
    const value = header(headers, name);
    if (value) return value.slice(0, 100);
  }
  return "";
}

/** The forge's id of this delivery (the same on its redeliveries), or null. */
export function forgeDeliveryId(kind: ForgeKind, headers: HookHeaders): string | null {
  const names =
    kind === "gitlab"
      ? ["x-gitlab-event-uuid", "x-gitlab-webhook-uuid", "idempotency-key"]
      : kind === "gitea"
        ? ["x-gitea-delivery", "x-github-delivery"]
        : ["x-github-delivery"];
  for (const name of names) {
    const value = header(headers, name);
    if (value) return value.slice(0, 200);
  }
  return null;
}
