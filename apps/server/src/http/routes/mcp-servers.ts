// A project's MCP servers as stored: env values and bearer tokens sealed, a secret the body leaves
// out kept from the server of the same name.
import type { ProjectMcpServerDocument } from "@gadget/db";
import { type McpServerBody, UserError } from "@gadget/protocol";
import type { SecretBox } from "../../crypto/secret-box.ts";

/**
 * The servers to store for `body`: values sealed; an env value `null`, or a left-out `env` or
 * `bearerToken`, keeps the stored one of the same-named server. 400 when there is none to keep.
 */
export function storedMcpServers(
  secretBox: SecretBox,
  body: readonly McpServerBody[],
  before: readonly ProjectMcpServerDocument[],
): ProjectMcpServerDocument[] {
  return body.map((server, index) => {
    const previous = before.find((stored) => stored.name === server.name);
    const kept = new Map((previous?.env ?? []).map((entry) => [entry.name, entry.valueEncrypted]));
    let env: ProjectMcpServerDocument["env"] = [];
    if (server.command) {
      if (server.env === undefined) {
        env = previous?.url ? [] : [...(previous?.env ?? [])];
      } else {
        env = Object.entries(server.env).map(([name, value]) => {
          const valueEncrypted = value === null ? kept.get(name) : secretBox.seal(value);
          if (!valueEncrypted) {
            throw new UserError(
              "validation_failed",
              `Invalid project: mcpServers.${index}.env.${name} needs a value (none is stored)`,
            );
          }
          return { name, valueEncrypted };
        });
      }
    }
    let bearerTokenEncrypted: string | null = null;
    if (server.url) {
      if (server.bearerToken) bearerTokenEncrypted = secretBox.seal(server.bearerToken);
      else if (server.bearerToken === undefined)
        bearerTokenEncrypted = previous?.bearerTokenEncrypted ?? null;
    }
    return {
      name: server.name,
      command: server.command ?? null,
      url: server.url ?? null,
      env,
      bearerTokenEncrypted,
      tools: server.tools ?? null,
    };
  });
}
