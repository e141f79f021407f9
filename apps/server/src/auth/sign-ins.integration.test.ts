// A user's sign-ins name the browser or program each was made with (from its User-Agent, in a few
// words), so the Account page tells a laptop's browser from a script.
import { describe, expect, it } from "vitest";
import { ApiClient, signup } from "../testing/api-client.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const running = useTestServer();

describe("sign-ins", () => {
  it("names each sign-in's browser or program", async () => {
    const url = running.server.url;
    const user = await signup(url, "devices");
    const firefox =
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.6; rv:132.0) Gecko/20100101 Firefox/132.0";
    const login = (agent: string) =>
      new ApiClient(url).request(
        "POST",
        "/api/auth/login",
        { email: user.email, password: "correct horse battery" },
        { "user-agent": agent },
      );
    expect((await login(firefox)).status).toBe(200);
    expect((await login("curl/8.5.0")).status).toBe(200);
    const listed = await user.get("/api/auth/sign-ins");
    expect(listed.status).toBe(200);
    const devices = (listed.body.signIns as Array<{ device: string | null; current: boolean }>)
      .map((signIn) => signIn.device)
      .sort();
    // The signup's own client is Node's fetch: "node".
    expect(devices).toEqual(["Firefox on macOS", "curl", "node"]);
    // The header itself is not kept.
    expect(JSON.stringify(listed.body)).not.toContain("Gecko");
  });
});
