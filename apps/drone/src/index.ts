// gadget-drone as a library, for tests and `pnpm start`: the runtime without the CLI.
export { type DroneConfig, readConfig, writeConfig } from "./config.ts";
export { Drone, type DroneSettings } from "./drone.ts";
export { contentSha, handleFileRequest } from "./file-relay.ts";
export { ActiveTurn, type TurnProgress } from "./turn-runner.ts";
