import { describe, expect, it } from "vitest";
import type { Presence } from "../drones/presence.ts";
import {
  type Candidate,
  candidates,
  claimStep,
  type Fleet,
  requirementsOf,
} from "./drone-choice.ts";

function presence(fields: Partial<Presence> = {}): Presence {
  return {
    online: true,
    name: null,
    serverId: "server-a",
    socketId: "socket",
    lastSeenAt: new Date(),
    capacity: 2,
    hostname: null,
    platform: null,
    version: null,
    workspaces: [],
    runningTurns: [],
    labels: ["os=linux", "arch=x64"],
    ephemeral: false,
    spent: false,
    draining: false,
    ...fields,
  };
}

/** The same order every time: the fleet's order, as `random` draws 0, 1, 2… */
function counting(): () => number {
  let next = 0;
  return () => next++;
}

const anyTurn = { sessionDrone: null, projectSlug: "demo", requires: [] };

describe("candidates", () => {
  it("puts the drone holding the session's worktree first, then holders of the clone", () => {
    const fleet: Fleet = [
      { droneId: "plain", presence: presence() },
      { droneId: "clone", presence: presence({ workspaces: ["demo"] }) },
      { droneId: "session", presence: presence() },
    ];
    const chosen = candidates(
      fleet,
      { ...anyTurn, sessionDrone: "session" },
      new Set(),
      counting(),
    );
    expect(chosen.map((candidate) => candidate.droneId)).toEqual(["session", "clone", "plain"]);
  });

  it("leaves out offline drones, drones that declined, draining drones and spent ephemeral drones", () => {
    const fleet: Fleet = [
      { droneId: "offline", presence: presence({ online: false }) },
      { droneId: "declined", presence: presence() },
      { droneId: "spent", presence: presence({ ephemeral: true, spent: true }) },
      { droneId: "stopping", presence: presence({ draining: true }) },
      { droneId: "fresh", presence: presence({ ephemeral: true }) },
    ];
    const chosen = candidates(fleet, anyTurn, new Set(["declined"]), counting());
    expect(chosen.map((candidate) => candidate.droneId)).toEqual(["fresh"]);
  });

  it("takes only drones with every required label", () => {
    const fleet: Fleet = [
      { droneId: "cpu", presence: presence({ labels: ["os=linux"] }) },
      { droneId: "gpu", presence: presence({ labels: ["os=linux", "gpu=a100"] }) },
      { droneId: "mac-gpu", presence: presence({ labels: ["os=macos", "gpu=m3"] }) },
    ];
    const chosen = candidates(fleet, { ...anyTurn, requires: ["gpu", "os=linux"] }, new Set());
    expect(chosen.map((candidate) => candidate.droneId)).toEqual(["gpu"]);
  });

  it("offers each drone with its capacity and name (one slot when it said none)", () => {
    const fleet: Fleet = [
      { droneId: "big", presence: presence({ capacity: 8, name: "big box" }) },
      { droneId: "old", presence: presence({ capacity: null }) },
    ];
    const chosen = candidates(fleet, anyTurn, new Set(), counting());
    expect(chosen.map(({ droneId, capacity, name }) => ({ droneId, capacity, name }))).toEqual([
      { droneId: "big", capacity: 8, name: "big box" },
      { droneId: "old", capacity: 1, name: null },
    ]);
  });
});

describe("requirementsOf", () => {
  it("joins the project's and the turn's labels, once each", () => {
    expect(requirementsOf({ requires: ["gpu", "os=linux"] }, { requires: ["gpu", "big"] })).toEqual(
      ["gpu", "os=linux", "big"],
    );
    expect(requirementsOf({}, { requires: null })).toEqual([]);
  });
});

describe("claimStep", () => {
  const offered: Candidate[] = [
    {
      droneId: "a",
      capacity: 1,
      name: "Drone A",
      holdsSession: false,
      hasWorkspace: false,
      order: 0,
    },
    { droneId: "b", capacity: 1, name: null, holdsSession: false, hasWorkspace: false, order: 1 },
  ];

  it("names the drone that was claimed, with the turn's next seq", () => {
    expect(claimStep({ status: "claimed", droneId: "a", seq: 7 }, offered, undefined)).toEqual({
      kind: "claimed",
      droneId: "a",
      seq: 7,
      name: "Drone A",
    });
  });

  it("leaves the turn queued when every slot is taken", () => {
    expect(claimStep({ status: "full" }, offered, undefined)).toEqual({ kind: "full" });
  });

  it("loads what Redis lost and claims again: the counter, or a drone's slots", () => {
    expect(claimStep({ status: "no_counter" }, offered, undefined)).toEqual({
      kind: "load_counter",
    });
    expect(claimStep({ status: "unloaded", droneId: "b" }, offered, undefined)).toEqual({
      kind: "load_slots",
      droneId: "b",
    });
  });

  it("calls a copy of the turn stale when its counter moved or is gone", () => {
    expect(claimStep({ status: "changed" }, offered, 3)).toEqual({ kind: "stale" });
    // Rebuilt from MongoDB, a counter cannot prove a copy current.
    expect(claimStep({ status: "no_counter" }, offered, 3)).toEqual({ kind: "stale" });
  });
});
