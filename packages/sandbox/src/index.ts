// @gadget/sandbox: every command the agent runs, confined by the operating system (bubblewrap on
// Linux, Seatbelt on macOS), a filtering proxy for projects that allow some hosts, and git that
// runs nothing a repository configured.
export {
  type BubblewrapOptions,
  type BubblewrapPlan,
  BubblewrapSandbox,
  bubblewrapArguments,
} from "./bubblewrap.ts";
export { type ConfinedProcess, spawnConfined } from "./confined-process.ts";
export { type Detection, type DetectOptions, detectSandbox, findExecutable } from "./detect.ts";
export { SandboxError } from "./errors.ts";
export { gitPaths } from "./git-directory.ts";
export { type HardenedGit, hardenedGit } from "./git-hardening.ts";
export { bridgePort, proxyEnvironment } from "./network/bridge.ts";
export { FilteringProxy, type FilteringProxyOptions } from "./network/filtering-proxy.ts";
export {
  HostAllowlist,
  type HostRule,
  isPublicAddress,
  parseHostRule,
  type Refusal,
} from "./network/host-allowlist.ts";
export { endOrphanedSandboxes, sandboxTag } from "./orphans.ts";
export {
  detectProcessLimiter,
  type ProcessLimiter,
  type ProcessLimitKind,
} from "./process-limit.ts";
export {
  type CommandConfinement,
  type CommandSpec,
  type ConfinementPolicy,
  type ConfinementReport,
  confine,
  type PreparedCommand,
  type Sandbox,
} from "./sandbox.ts";
export { sandboxEnvironment } from "./sandbox-environment.ts";
export { type SeatbeltPlan, SeatbeltSandbox, seatbeltProfile } from "./seatbelt.ts";
export { type HostLayout, planSystemView, type SystemView } from "./system-view.ts";
export { Unconfined } from "./unconfined.ts";
