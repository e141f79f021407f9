// gadget-drone/testing: fixtures for tests of the drone that live outside it (tests/e2e): a
// project's remote repository, the machine's real sandbox for a Drone built in-process, and the
// forge client that opens pull requests.

export { openOrUpdatePullRequest } from "../forge/pull-request.ts";
export { worktreeDirectory } from "../workspace/worktree.ts";
export { createRemote, type RemoteFixture } from "./git-fixtures.ts";
export { droneSandbox } from "./sandbox.ts";
