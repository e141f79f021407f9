// Test kit of the server: server instances for tests (in-process and as a child process), and the
// wire clients of @gadget/testkit/wire with the scripted drone checking providers as gadget-drone,
// and where the server's keys live in Redis (the failover tests kill the master holding them).
export { keyTag, queuePrefix } from "../redis/key-space.ts";
export {
  ApiClient,
  type ApiResponse,
  IdeClient,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
} from "./api-client.ts";
export { DroneRefused, ScriptedDrone, type ScriptedDroneOptions } from "./scripted-drone.ts";
export {
  type ServerPair,
  type ServerProcess,
  startServerPair,
  startServerProcess,
} from "./server-process.ts";
export { startTestServer, type TestServerOptions, testConfig, uniqueName } from "./test-server.ts";
export { type ReceivedDelivery, WebhookReceiver } from "./webhook-receiver.ts";
