// @gadget/testkit/wire: clients of the server's wire for tests and benchmarks of any app: the REST
// and /ide clients, and a scripted drone. They speak the protocol only; no server code is imported.
export {
  ApiClient,
  type ApiResponse,
  IdeClient,
  type IdeSocket,
  registerDrone,
  setupWorkspace,
  signup,
  waitFor,
  waitForDroneOnline,
  waitForDrones,
} from "./api-client.ts";
export { DroneRefused, ScriptedDrone, type ScriptedDroneOptions } from "./scripted-drone.ts";
