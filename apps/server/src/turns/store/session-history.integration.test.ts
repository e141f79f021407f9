// A session's history gets each completed turn's exchange once, even when the completion is
// retried, with a `/command`'s expansion as its prompt, and loses none to the session's other
// writes made at the same moment.
import { Types } from "mongoose";
import { describe, expect, it } from "vitest";
import { setupWorkspace, signup } from "../../testing/api-client.ts";
import { useTestServer } from "../../testing/use-test-server.ts";
import { rememberExchange, rememberPullRequest } from "./session-history.ts";

const fixture = useTestServer();

describe("session history", () => {
  it("adds a turn's prompt and answer once, however often its completion is stored", async () => {
    const user = await signup(fixture.server.url, "history");
    const workspace = await setupWorkspace(user);
    const { context } = fixture.server;
    const session = new Types.ObjectId(workspace.sessionId);
    const turn = (prompt: string, response: string | null) => ({
      _id: new Types.ObjectId(),
      session,
      prompt,
      response,
      createdAt: new Date("2026-11-21T10:00:00Z"),
      finishedAt: new Date("2026-11-21T10:01:00Z"),
    });
    const first = turn("What is in the README?", "A title.");
    const second = turn("Stop", null);
    // The retry a drone makes when the turn's write failed after the history's, twice at once too.
    await rememberExchange(context, first);
    await Promise.all([rememberExchange(context, first), rememberExchange(context, first)]);
    await rememberExchange(context, second);
    await rememberExchange(context, second);

    const stored = await context.models.ChatSession.findById(session).lean();
    expect(stored?.history.map((message) => [message.role, message.content])).toEqual([
      ["user", "What is in the README?"],
      ["assistant", "A title."],
      ["user", "Stop"],
    ]);
  });

  it("keeps what a turn's /command became as its prompt, and a prompt that called none as typed", async () => {
    const user = await signup(fixture.server.url, "history-command");
    const workspace = await setupWorkspace(user);
    const { context } = fixture.server;
    const session = new Types.ObjectId(workspace.sessionId);
    const times = { createdAt: new Date(), finishedAt: new Date() };
    const called = { _id: new Types.ObjectId(), session, prompt: "/review a.ts", response: "Ok." };
    const plain = {
      _id: new Types.ObjectId(),
      session,
      prompt: "/src/app.ts is broken",
      response: "Ok.",
    };
    await context.models.TurnEvent.create({
      turn: called._id,
      seq: 3,
      type: "command",
      data: {
        name: "review",
        source: "file",
        origin: ".gadget/commands/review.md",
        arguments: "a.ts",
        prompt: "Review a.ts carefully.",
      },
      at: new Date(),
    });
    await rememberExchange(context, { ...called, ...times });
    await rememberExchange(context, { ...plain, ...times });
    const stored = await context.models.ChatSession.findById(session).lean();
    expect(
      stored?.history.filter((message) => message.role === "user").map((m) => m.content),
    ).toEqual(["Review a.ts carefully.", "/src/app.ts is broken"]);
  });

  it("loses no exchange to a rename or a pull request written to the session at the same time", async () => {
    const user = await signup(fixture.server.url, "history-together");
    const workspace = await setupWorkspace(user);
    const { context } = fixture.server;
    const session = new Types.ObjectId(workspace.sessionId);
    const times = { createdAt: new Date(), finishedAt: new Date() };
    const count = 12;
    // FerretDB v1 rewrites the whole document on each update: unlocked, one write undoes another.
    await Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const turn = { _id: new Types.ObjectId(), session, ...times };
        await Promise.all([
          rememberExchange(context, {
            ...turn,
            prompt: `prompt ${index}`,
            response: `answer ${index}`,
          }),
          user.patch(`/api/sessions/${workspace.sessionId}`, { name: `renamed ${index}` }),
          rememberPullRequest(context, session, {
            url: `https://forge.test/pr/${index}`,
            number: index,
          }),
        ]);
      }),
    );
    const stored = await context.models.ChatSession.findById(session).lean();
    const prompts = stored?.history
      .filter((message) => message.role === "user")
      .map((message) => message.content);
    expect(prompts?.sort()).toEqual(
      Array.from({ length: count }, (_, index) => `prompt ${index}`).sort(),
    );
    expect(stored?.history).toHaveLength(count * 2);
    expect(stored?.name).toMatch(/^renamed \d+$/);
    expect(stored?.pullRequest?.url).toMatch(/^https:\/\/forge\.test\/pr\/\d+$/);
  });
});
