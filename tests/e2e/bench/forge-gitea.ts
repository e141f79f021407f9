// The forge against a real Gitea: opening and updating a session's pull request through the
// drone's client beside the same API calls made by hand with fetch, round by round (which goes
// first alternating); and a forge event's signed delivery to the server's answer with its turn
// queued, and on to its work order in a drone's hands (the sender's permission asked of Gitea in
// between; Gitea's own webhook latency aside: the deliveries are sent directly), beside the same
// turn made through the REST API and Gitea's permission answer alone, in the same rounds; and a
// Gitea review on a session's pull request, whose line comments are asked of Gitea beside the
// permission (its webhook does not carry them).
import { createHmac } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { agentEvent } from "@gadget/protocol";
import { startTestServer } from "@gadget/server/testing";
import { findRepoRoot, startGitea, startServices } from "@gadget/services";
import { markdownTable, summarize, time } from "@gadget/testkit/measure";
import { registerDrone, ScriptedDrone, signup } from "@gadget/testkit/wire";
import { openOrUpdatePullRequest } from "gadget-drone/testing";

const rounds = Number(process.env.BENCH_FORGE_ROUNDS ?? 15);
/** Forge event rounds (at most 32: a drone takes 64 turns): more than the pull requests', for a p95 that is not the slowest round. */
const eventRounds = Number(process.env.BENCH_FORGE_EVENT_ROUNDS ?? 30);

const root = await mkdtemp(path.join(tmpdir(), "gadget-forge-bench-"));
const gitea = await startGitea();
const services = await startServices({
  rootDir: findRepoRoot(),
  dataDir: path.join(root, "services"),
  mongoUrl: process.env.MONGO_URL,
  redisUrl: process.env.REDIS_URL,
});
try {
  const repository = await gitea.createRepository("bench");
  const token = gitea.admin.token;
  const forge = { kind: "gitea" as const, apiUrl: gitea.apiUrl, token };
  const headers = {
    Authorization: `token ${token}`,
    Accept: "application/json",
    "Content-Type": "application/json",
  };
  const pulls = `${gitea.apiUrl}/repos/${repository.fullName}/pulls`;
  // Two branches a round, each with a change (made through the API, not measured).
  for (let round = 0; round < rounds; round++) {
    for (const who of ["drone", "hand"]) {
      const made = await gitea.api(
        "POST",
        `/repos/${repository.fullName}/contents/${who}-${round}.txt`,
        {
          body: {
            content: Buffer.from(`${round}\n`).toString("base64"),
            new_branch: `${who}-${round}`,
          },
        },
      );
      if (made.status !== 201) throw new Error(`branch ${who}-${round}: ${made.status}`);
    }
  }
  const open = { drone: [] as number[], hand: [] as number[] };
  const update = { drone: [] as number[], hand: [] as number[] };
  let firstPull = { url: "", number: 0 };
  for (let round = 0; round < rounds; round++) {
    let droneNumber = 0;
    let handNumber = 0;
    const droneOpen = async () => {
      const outcome = await openOrUpdatePullRequest({
        forge,
        gitUrl: repository.cloneUrl,
        head: `drone-${round}`,
        base: "main",
        title: `Drone ${round}`,
        body: "one",
      });
      if (!outcome.pullRequest) throw new Error(outcome.error);
      droneNumber = outcome.pullRequest.number;
      if (round === 0) firstPull = outcome.pullRequest;
    };
    const handOpen = async () => {
      const response = await fetch(pulls, {
        method: "POST",
        headers,
        body: JSON.stringify({
          head: `hand-${round}`,
          base: "main",
          title: `Hand ${round}`,
          body: "one",
        }),
      });
      handNumber = ((await response.json()) as { number: number }).number;
    };
    const droneUpdate = async () => {
      const outcome = await openOrUpdatePullRequest({
        forge,
        gitUrl: repository.cloneUrl,
        head: `drone-${round}`,
        base: "main",
        title: `Drone ${round}`,
        body: "two",
        existing: { url: "", number: droneNumber },
      });
      if (outcome.error) throw new Error(outcome.error);
    };
    // By hand, the same two calls: is it still open, then the new body.
    const handUpdate = async () => {
      await (await fetch(`${pulls}/${handNumber}`, { headers })).json();
      await (
        await fetch(`${pulls}/${handNumber}`, {
          method: "PATCH",
          headers,
          body: JSON.stringify({ body: "two" }),
        })
      ).json();
    };
    const pairs: Array<
      [() => Promise<void>, () => Promise<void>, { drone: number[]; hand: number[] }]
    > = [
      [droneOpen, handOpen, open],
      [droneUpdate, handUpdate, update],
    ];
    for (const [drone, hand, into] of pairs) {
      if (round % 2 === 0) {
        into.drone.push(await time(drone));
        into.hand.push(await time(hand));
      } else {
        into.hand.push(await time(hand));
        into.drone.push(await time(drone));
      }
    }
  }

  // Forge events: a signed issue comment from a writer → 202 with the turn queued → its work order
  // on a drone; beside, in the same rounds (which goes first alternating), the same turn made by
  // hand through the REST API (a session, then its turn) and the forge's permission question alone.
  // BENCH_FORGE_BEFORE_SERVER=<another checkout's apps/server>: that build's server takes the same
  // deliveries in the same rounds, on the same services and Gitea.
  const beforeDirectory = process.env.BENCH_FORGE_BEFORE_SERVER;
  const starts: Array<[string, typeof startTestServer]> = [["this build", startTestServer]];
  if (beforeDirectory) {
    const before = (await import(path.resolve(beforeDirectory, "src/testing/index.ts"))) as {
      startTestServer: typeof startTestServer;
    };
    starts.push(["before", before.startTestServer]);
  }
  const stages = await Promise.all(
    starts.map(async ([name, start], index) => {
      const server = await start(
        { mongoUrl: services.mongoUrl, redisUrl: services.redisUrl, allowPrivateNetwork: true },
        `forge_bench_${index}_${process.pid}`,
      );
      const user = await signup(server.url, `forge-bench-${index}`);
      const provider = (
        await user.post("/api/providers", {
          name: "scripted",
          baseUrl: "http://127.0.0.1:9/v1",
          apiKey: "sk-x",
          modelId: "scripted-model",
        })
      ).body.provider;
      const project = (
        await user.post("/api/projects", {
          name: "Bench",
          gitUrl: repository.cloneUrl,
          forge: { ...forge, events: { enabled: true } },
        })
      ).body.project;
      const hook = (await user.post(`/api/projects/${project._id}/forge-events/secret`)).body;
      // A drone that takes every turn: each issue is a session of its own, none waits behind another.
      const capacity = Math.min(64, 2 * eventRounds);
      const { droneId, credential } = await registerDrone(user, { name: "bench", capacity });
      const drone = await ScriptedDrone.connect({ url: server.url, droneId, credential, capacity });
      return {
        name,
        server,
        user,
        provider,
        project,
        hook: hook as { url: string; secret: string },
        drone,
        answered: [] as number[],
        dispatched: [] as number[],
      };
    }),
  );
  const byHand: number[] = [];
  const permission: number[] = [];
  const reviewAnswered: number[] = [];
  const reviewDispatched: number[] = [];
  let firstTurn = "";
  try {
    for (let round = 0; round < eventRounds; round++) {
      const viaForge = async (stage: (typeof stages)[number]) => {
        const issue = await gitea.api<{ number: number; html_url: string }>(
          "POST",
          `/repos/${repository.fullName}/issues`,
          { body: { title: `Issue ${round}`, body: "Do it." } },
        );
        const body = JSON.stringify({
          action: "created",
          issue: {
            number: issue.body.number,
            title: `Issue ${round}`,
            body: "Do it.",
            html_url: issue.body.html_url,
          },
          comment: { id: round + 1, body: "@gadget go" },
          sender: { login: gitea.admin.name },
        });
        const signature = createHmac("sha256", stage.hook.secret).update(body).digest("hex");
        const sent = performance.now();
        const response = await fetch(stage.hook.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-gitea-event": "issue_comment",
            "x-gitea-delivery": `bench-${round}`,
            "x-gitea-signature": signature,
          },
          body,
        });
        if (response.status !== 202) throw new Error(`answered ${response.status}`);
        stage.answered.push(performance.now() - sent);
        const order = await stage.drone.nextWorkOrder(10_000);
        stage.dispatched.push(performance.now() - sent);
        if (round === 0 && stage === stages[0]) firstTurn = order.turnId;
      };
      const [stage] = stages;
      if (!stage) throw new Error("no server");
      const viaRest = async () => {
        const sent = performance.now();
        const session = await stage.user.post(`/api/projects/${stage.project._id}/sessions`, {
          name: `by-hand-${round}`,
        });
        const turn = await stage.user.post(`/api/sessions/${session.body.session._id}/turns`, {
          prompt: "Do it.",
          providerId: stage.provider._id,
        });
        if (turn.status !== 202) throw new Error(`turn answered ${turn.status}`);
        await stage.drone.nextWorkOrder(10_000);
        byHand.push(performance.now() - sent);
      };
      const askPermission = async () => {
        const response = await fetch(
          `${gitea.apiUrl}/repos/${repository.fullName}/collaborators/${gitea.admin.name}/permission`,
          { headers },
        );
        await response.json();
      };
      // Each forge delivery leaves Gitea a comment to write (the bot's): the REST turn between two
      // servers' deliveries, and the order reversed every other round, give each server the same
      // neighbours.
      const forgeSteps = stages.map((each) => () => viaForge(each));
      const steps = [forgeSteps[0], viaRest, ...forgeSteps.slice(1)].filter(
        (step): step is () => Promise<void> => step !== undefined,
      );
      if (round % 2 === 1) steps.reverse();
      for (const step of steps) await step();
      permission.push(await time(askPermission));
    }

    const [stage] = stages;
    if (!stage) throw new Error("no server");
    // A Gitea review on the first issue session's pull request: the session learns its pull
    // request from its turn's delivery, and Gitea holds a real review with a line comment.
    const done = async (turnId: string, extra: ReturnType<typeof agentEvent>[] = []) => {
      const ack = await stage.drone.stream(turnId, [
        ...extra,
        agentEvent("done", { reason: "completed", passes: 1, totalCost: 0 }),
      ]);
      if (!ack.ok) throw new Error(`done refused: ${JSON.stringify(ack)}`);
    };
    await done(firstTurn, [
      agentEvent("delivery", {
        branch: "drone-0",
        commit: null,
        pushed: true,
        pullRequestUrl: firstPull.url,
        pullRequestNumber: firstPull.number,
      }),
    ]);
    const reviewText = "@gadget have a look";
    const reviewed = await gitea.api(
      "POST",
      `/repos/${repository.fullName}/pulls/${firstPull.number}/reviews`,
      {
        body: {
          event: "COMMENT",
          body: reviewText,
          comments: [{ path: "drone-0.txt", body: "@gadget say why", new_position: 1 }],
        },
      },
    );
    if (reviewed.status !== 200) throw new Error(`review: ${reviewed.status}`);
    for (let round = 0; round < eventRounds; round++) {
      const body = JSON.stringify({
        action: "reviewed",
        number: firstPull.number,
        pull_request: {
          number: firstPull.number,
          title: "Drone 0",
          body: "",
          html_url: firstPull.url,
        },
        review: { type: "pull_request_review_comment", content: reviewText },
        sender: { login: gitea.admin.name },
      });
      const signature = createHmac("sha256", stage.hook.secret).update(body).digest("hex");
      let turnId = "";
      reviewAnswered.push(
        await time(async () => {
          const response = await fetch(stage.hook.url, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              "x-gitea-event": "pull_request_comment",
              "x-gitea-delivery": `bench-review-${round}`,
              "x-gitea-signature": signature,
            },
            body,
          });
          if (response.status !== 202) throw new Error(`answered ${response.status}`);
          turnId = ((await response.json()) as { turnId: string }).turnId;
        }),
      );
      let order: { turnId: string; prompt: string } | null = null;
      reviewDispatched.push(
        (reviewAnswered.at(-1) as number) +
          (await time(async () => {
            order = await stage.drone.nextWorkOrder(10_000);
          })),
      );
      const taken = order as { turnId: string; prompt: string } | null;
      if (taken?.turnId !== turnId || !taken.prompt.includes("File: drone-0.txt, line 1")) {
        throw new Error("the review's work order was not its turn's, or had no line comment");
      }
      // The session's next follow-up dispatches only once this one has ended.
      await done(turnId);
    }
  } finally {
    // Each server first: its stop lets its drone go in order; a drone leaving first has the server
    // handle a lost drone while it stops.
    for (const stage of stages) {
      await stage.server.close();
      await stage.drone.close();
    }
  }

  const row = (name: string, values: number[]) => {
    const summary = summarize(values);
    return [name, summary.p50.toFixed(1), summary.p95.toFixed(1), summary.max.toFixed(1)];
  };
  const ratio = (name: string, drone: number[], hand: number[]) => [
    name,
    `${(summarize(drone).p50 / summarize(hand).p50).toFixed(2)}×`,
    `${(summarize(drone).p95 / summarize(hand).p95).toFixed(2)}×`,
    "",
  ];
  console.log(
    `\nA real Gitea on loopback, ${rounds} pull request rounds, ${eventRounds} forge event rounds\n`,
  );
  console.log(
    markdownTable(
      ["case", "p50 (ms)", "p95 (ms)", "max (ms)"],
      [
        row("open: the drone's client (POST)", open.drone),
        row("open: by hand with fetch (POST)", open.hand),
        ratio("open: ratio", open.drone, open.hand),
        row("update: the drone's client (GET, PATCH)", update.drone),
        row("update: by hand with fetch (GET, PATCH)", update.hand),
        ratio("update: ratio", update.drone, update.hand),
        ...stages.flatMap((stage) => [
          row(`forge event (${stage.name}): signed delivery → 202, turn queued`, stage.answered),
          row(
            `forge event (${stage.name}): signed delivery → the work order on a drone`,
            stage.dispatched,
          ),
        ]),
        row("by hand: POST a session, POST its turn → the work order on a drone", byHand),
        ratio("forge event → work order: ratio to by hand", stages[0]?.dispatched ?? [], byHand),
        row("Gitea alone: the sender's permission asked with fetch", permission),
        row("Gitea review (lines asked of Gitea) → 202, turn queued", reviewAnswered),
        row("Gitea review (lines asked of Gitea) → the work order on a drone", reviewDispatched),
      ],
    ),
  );
} finally {
  await services.stop();
  await gitea.stop();
  await rm(root, { recursive: true, force: true });
}
