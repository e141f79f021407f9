// Drone and registration-token writes under their locks, against a real FerretDB and Redis: a
// drone revoked while its owner keeps renaming it stays revoked, and its credential stays
// refused; a reusable token revoked while drones register with it registers no more.
import { describe, expect, it } from "vitest";
import { registerDrone, signup } from "../testing/api-client.ts";
import { useTestServer } from "../testing/use-test-server.ts";
import { updateDrone, updateRegistrationToken } from "./drone-writes.ts";

const fixture = useTestServer();

describe("updateDrone", () => {
  it("keeps a revocation made while the drone is renamed", async () => {
    const user = await signup(fixture.server.url, "revoked-while-renamed");
    const { context } = fixture.server;
    const outcomes: string[] = [];
    for (let round = 1; round <= 20; round++) {
      const { droneId, credential } = await registerDrone(user, { name: `lent-${round}` });
      // The renames keep coming until the revocation is answered. Unlocked, FerretDB v1's
      // whole-document rewrite gave back an unrevoked drone in about one round in eight.
      let revoking = true;
      const rename = async (index: number) => {
        while (revoking) {
          await updateDrone(
            context,
            { _id: droneId, revokedAt: null },
            { $set: { name: `renamed-${index}` } },
          );
        }
      };
      const renaming = Promise.all([0, 1, 2, 3].map(rename));
      const revoked = await user.delete(`/api/drones/${droneId}`);
      revoking = false;
      await renaming;
      const self = await fetch(`${fixture.server.url}/api/drones/self`, {
        headers: { authorization: `Drone ${droneId}:${credential}` },
      });
      outcomes.push(`${revoked.status} ${self.status}`);
    }
    expect(outcomes).toEqual(Array.from({ length: 20 }, () => "204 403"));
    expect((await user.get("/api/drones")).body.drones).toEqual([]);
  });

  it("keeps a registration token's revocation made while drones register with it", async () => {
    const user = await signup(fixture.server.url, "token-revoked-while-used");
    const { context } = fixture.server;
    const outcomes: string[] = [];
    for (let round = 1; round <= 20; round++) {
      const created = await user.post("/api/drones/registration-tokens", { reusable: true });
      const { _id: tokenId, token } = created.body as { _id: string; token: string };
      // Each registration marks the token used (as the register route does) until the
      // revocation is answered.
      let revoking = true;
      const use = async () => {
        while (revoking) {
          await updateRegistrationToken(
            context,
            { _id: tokenId },
            { $set: { usedAt: new Date() } },
          );
        }
      };
      const using = Promise.all([0, 1, 2, 3].map(use));
      const revoked = await user.delete(`/api/drones/registration-tokens/${tokenId}`);
      revoking = false;
      await using;
      const registered = await fetch(`${fixture.server.url}/api/drones/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ token, name: `late-${round}` }),
      });
      outcomes.push(`${revoked.status} ${registered.status}`);
    }
    expect(outcomes).toEqual(Array.from({ length: 20 }, () => "204 401"));
  });
});
