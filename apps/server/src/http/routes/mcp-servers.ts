// A project's MCP servers as stored: env values and bearer tokens sealed, a secret the body leaves
// out kept from the server of the same name.
import type { ProjectMcpServerDocument } from "@gadget/db";
import { type McpServerBody, UserError } from "@gadget/protocol";
import type { SecretBox } from "../../crypto/secret-box.ts";

/**
 * Variables to store for `body` (a whole map): each value sealed; `null` keeps the stored value of
 * that name, 400 naming `field` when there is none.
 */
export function storedEnv(
  secretBox: SecretBox,
  body: Readonly<Record<string, string | null>>,
  before: ReadonlyArray<{ name: string; valueEncrypted: string }>,
  field: string,
): Array<{ name: string; valueEncrypted: string }> {
  const kept = new Map(before.map((entry) => [entry.name, entry.valueEncrypted]));
  return Object.entries(body).map(([name, value]) => {
    const valueEncrypted = value === null ? kept.get(name) : secretBox.seal(value);
    if (!valueEncrypted) {
      throw new UserError(
        "validation_failed",
        `Invalid project: ${field}.${name} needs a value (none is stored)`,
      );
    }
    return { name, valueEncrypted };
  });
}

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
    let env: ProjectMcpServerDocument["env"] = [];
    if (server.command) {
      if (server.env === undefined) {
        env = previous?.url ? [] : [...(previous?.env ?? [])];
      } else {
        env = storedEnv(secretBox, server.env, previous?.env ?? [], `mcpServers.${index}.env`);
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
