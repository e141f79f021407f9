// The scripted drone of @gadget/testkit/wire, answering provider checks as gadget-drone does (the
// agent's checkAndProbe with fetch), so a loopback provider is reachable as from a user's machine.
// testkit cannot do this itself: the agent's tests depend on testkit.
import { checkAndProbe, fetchModelList } from "@gadget/agent";
import {
  type ScriptedDroneOptions,
  ScriptedDrone as WireScriptedDrone,
} from "@gadget/testkit/wire";

export { DroneRefused, type ScriptedDroneOptions } from "@gadget/testkit/wire";

export type ScriptedDrone = WireScriptedDrone;

/** @example const drone = await ScriptedDrone.connect({ url, droneId, credential }); */
export const ScriptedDrone = {
  connect(options: ScriptedDroneOptions): Promise<ScriptedDrone> {
    return WireScriptedDrone.connect({
      onProviderCheck: async (request) => ({
        ok: true,
        ...(await checkAndProbe(request, fetchModelList(), request.probe)),
      }),
      ...options,
    });
  },
};
