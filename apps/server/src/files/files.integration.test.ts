// The file relay: list/read/write in a project's workspace on a drone that has it; 503 when no
// such drone is online; the drone's 409 on a stale baseSha comes through.
import { createHash } from "node:crypto";
import type { Ack, FileRequest, FileResponse } from "@gadget/protocol";
import { describe, expect, it } from "vitest";
import { registerDrone, setupWorkspace, signup, waitForDrones } from "../testing/api-client.ts";
import { ScriptedDrone } from "../testing/scripted-drone.ts";
import { useTestServer } from "../testing/use-test-server.ts";

const fixture = useTestServer();
const drones = fixture.drones;

const sha = (content: string) => createHash("sha1").update(content).digest("hex");

/** A tiny in-memory workspace answering file requests like a drone would. */
function memoryWorkspace(files: Map<string, string>) {
  return (request: FileRequest): Ack<{ result: FileResponse }> => {
    if (request.op === "list") {
      return {
        ok: true,
        result: {
          entries: [...files.keys()].map((path) => ({
            name: path,
            path,
            type: "file" as const,
            size: files.get(path)!.length,
          })),
        },
      };
    }
    const current = files.get(request.path);
    if (request.op === "read") {
      if (current === undefined)
        return { ok: false, error: { code: "not_found", message: `${request.path} not found` } };
      return { ok: true, result: { path: request.path, content: current, sha: sha(current) } };
    }
    if (request.baseSha && current !== undefined && request.baseSha !== sha(current)) {
      return {
        ok: false,
        error: {
          code: "conflict",
          message: "The file changed since you opened it",
          details: { sha: sha(current) },
        },
      };
    }
    files.set(request.path, request.content);
    return { ok: true, result: { sha: sha(request.content) } };
  };
}

describe("file relay", () => {
  it("answers 503 with a clear message when no online drone holds the workspace", async () => {
    const user = await signup(fixture.server.url, "nofiles");
    const { projectId } = await setupWorkspace(user);
    const response = await user.get(`/api/projects/${projectId}/files?path=`);
    expect(response.status).toBe(503);
    expect(response.body.error.code).toBe("no_drone_online");
    expect(response.body.error.message).toBe(
      'No drone is online to open project "Demo Project": start one of your drones',
    );
    expect(response.body.error.details).toEqual({ reason: "offline" });
    // Online, but without a checkout: the message says how one comes to be.
    const { droneId, credential } = await registerDrone(user);
    const drone = await ScriptedDrone.connect({ url: fixture.server.url, droneId, credential });
    fixture.drones.push(drone);
    await waitForDrones(user, "online");
    const withoutCheckout = await user.get(`/api/projects/${projectId}/files?path=`);
    expect(withoutCheckout.status).toBe(503);
    expect(withoutCheckout.body.error.message).toBe(
      'No online drone has a checkout of project "Demo Project" yet: a drone clones it when it runs the project\'s first turn',
    );
    expect(withoutCheckout.body.error.details).toEqual({ reason: "no_checkout" });
  });

  it("answers 503 `no_answer` when the drone holding the checkout does not answer in time", async () => {
    const user = await signup(fixture.server.url, "silentfiles");
    const { projectId, projectSlug } = await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user);
    const drone = await ScriptedDrone.connect({
      url: fixture.server.url,
      droneId,
      credential,
      workspaces: [projectSlug],
      // Holds the request past the server's drone request timeout (5 s in tests).
      onFileRequest: () => new Promise(() => {}),
    });
    drones.push(drone);
    await waitForDrones(user, "online");
    const response = await user.get(`/api/projects/${projectId}/files?path=`);
    expect(response.status).toBe(503);
    expect(response.body.error).toEqual({
      code: "no_drone_online",
      message: 'No drone holding project "Demo Project" answered in time; try again',
      details: { reason: "no_answer" },
    });
    expect(drone.fileRequests).toHaveLength(1);
  });

  it("lists, reads and writes through the drone, and relays 409 on a stale baseSha", async () => {
    const user = await signup(fixture.server.url, "files");
    const { projectId, projectSlug } = await setupWorkspace(user);
    const { droneId, credential } = await registerDrone(user);
    const files = new Map([["README.md", "# Demo\n"]]);
    const drone = await ScriptedDrone.connect({
      url: fixture.server.url,
      droneId,
      credential,
      workspaces: [projectSlug],
      onFileRequest: memoryWorkspace(files),
    });
    drones.push(drone);
    await waitForDrones(user, "online");

    const listing = await user.get(`/api/projects/${projectId}/files?path=`);
    expect(listing.status).toBe(200);
    expect(listing.body.entries).toEqual([
      { name: "README.md", path: "README.md", type: "file", size: 7 },
    ]);
    expect(drone.fileRequests[0]).toMatchObject({
      op: "list",
      projectSlug,
      gitUrl: "https://example.com/demo.git",
    });

    const read = await user.get(`/api/projects/${projectId}/file?path=README.md`);
    expect(read.body).toEqual({ path: "README.md", content: "# Demo\n", sha: sha("# Demo\n") });
    expect((await user.get(`/api/projects/${projectId}/file?path=missing.md`)).status).toBe(404);

    const written = await user.put(`/api/projects/${projectId}/file`, {
      path: "README.md",
      content: "# Changed\n",
      baseSha: read.body.sha,
    });
    expect(written.status).toBe(200);
    expect(written.body).toEqual({ sha: sha("# Changed\n") });
    const stale = await user.put(`/api/projects/${projectId}/file`, {
      path: "README.md",
      content: "# Mine\n",
      baseSha: read.body.sha,
    });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("conflict");
    expect(files.get("README.md")).toBe("# Changed\n");
    expect((await user.get(`/api/projects/${projectId}/file`)).status).toBe(400);
  });
});
