// No sandbox: what `gadget-drone start --no-sandbox` runs with. Commands run as the drone's user
// with the host's network; every turn says so, and the web IDE marks the drone "unsandboxed".
import type { SandboxInfo } from "@gadget/protocol";
import type { CommandSpec, PreparedCommand, Sandbox } from "./sandbox.ts";

export class Unconfined implements Sandbox {
  readonly info: SandboxInfo = { kind: "none", version: null, network: "host" };

  async prepare(command: CommandSpec): Promise<PreparedCommand> {
    return {
      argv: [...command.argv],
      env: { ...command.env },
      finish: async () => ({ refused: [] }),
    };
  }
}
