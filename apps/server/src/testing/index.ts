// Test kit of the server: a scripted drone, an API and /ide client, and server instances for tests.
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
export { startTestServer, type TestServerOptions, testConfig, uniqueName } from "./test-server.ts";
