// Each forge's proof that a delivery is its own: GitHub's and Gitea's HMAC of the raw body, Gitea's
// bare-hex header, GitLab's token; and the headers naming the event and the delivery.
import { describe, expect, it } from "vitest";
import {
  forgeDeliveryId,
  forgeEventName,
  forgeSignature,
  verifyForgeSignature,
} from "./signature.ts";

const secret = "gfe_secret";
const body = '{"action":"created"}';
const hex = forgeSignature(secret, body);

describe("a forge delivery's signature", () => {
  it("is GitHub's sha256= HMAC of the exact body", () => {
    // GitHub's documented example ("Validating webhook deliveries").
    expect(forgeSignature("It's a Secret to Everybody", "Hello, World!")).toBe(
      "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    );
    expect(
      verifyForgeSignature("github", { "x-hub-signature-256": `sha256=${hex}` }, body, secret),
    ).toBe(true);
    expect(
      verifyForgeSignature(
        "github",
        { "x-hub-signature-256": `sha256=${hex}` },
        `${body} `,
        secret,
      ),
    ).toBe(false);
    expect(
      verifyForgeSignature("github", { "x-hub-signature-256": `sha256=${hex}` }, body, "other"),
    ).toBe(false);
    // GitHub never sends Gitea's header; it is not taken in place of its own.
    expect(verifyForgeSignature("github", { "x-gitea-signature": hex }, body, secret)).toBe(false);
    expect(verifyForgeSignature("github", {}, body, secret)).toBe(false);
  });

  it("is Gitea's bare hex or its GitHub-style header", () => {
    expect(verifyForgeSignature("gitea", { "x-gitea-signature": hex }, body, secret)).toBe(true);
    expect(
      verifyForgeSignature("gitea", { "x-hub-signature-256": `sha256=${hex}` }, body, secret),
    ).toBe(true);
    expect(verifyForgeSignature("gitea", { "x-gitea-signature": hex.slice(1) }, body, secret)).toBe(
      false,
    );
    // A wrong GitHub-style header is not rescued by a right Gitea one.
    expect(
      verifyForgeSignature(
        "gitea",
        { "x-hub-signature-256": "sha256=00", "x-gitea-signature": hex },
        body,
        secret,
      ),
    ).toBe(false);
  });

  it("is GitLab's token, the secret itself", () => {
    expect(verifyForgeSignature("gitlab", { "x-gitlab-token": secret }, body, secret)).toBe(true);
    expect(verifyForgeSignature("gitlab", { "x-gitlab-token": `${secret}x` }, body, secret)).toBe(
      false,
    );
    expect(
      verifyForgeSignature("gitlab", { "x-hub-signature-256": `sha256=${hex}` }, body, secret),
    ).toBe(false);
  });

  it("reads each forge's event and delivery headers", () => {
    expect(forgeEventName("gitea", { "x-gitea-event": "issues" })).toBe("issues");
    expect(forgeEventName("gitlab", { "x-gitlab-event": "Note Hook" })).toBe("Note Hook");
    expect(forgeEventName("github", { "x-gitea-event": "issues" })).toBe("");
    expect(forgeDeliveryId("github", { "x-github-delivery": "72d3162e" })).toBe("72d3162e");
    expect(forgeDeliveryId("gitea", { "x-gitea-delivery": "a-b" })).toBe("a-b");
    expect(forgeDeliveryId("gitlab", { "x-gitlab-event-uuid": "u-1" })).toBe("u-1");
    expect(forgeDeliveryId("github", {})).toBeNull();
  });
});
