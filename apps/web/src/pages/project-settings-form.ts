// The project settings form's values and their schema: text fields turned into the PATCH body's
// lists, checked with the protocol's own schemas (hosts, labels, branch prefix, commit author,
// forge, MCP servers), and the body that sends only what changed.
import {
  commitAuthorSchema,
  type DeliveryMode,
  type ForgeKind,
  forgeBodySchema,
  forgeKindSchema,
  mcpServersBodySchema,
  type NetworkMode,
  type Project,
  type UpdateProjectBody,
  updateProjectBodySchema,
} from "@gadget/protocol";
import { z } from "zod";
import { envBodyOf } from "../components/env-editor.tsx";
import type { FieldAliases } from "../forms/server-problems.ts";
import { lineList, wordList } from "../forms/text-values.ts";
import { draftOf, type McpServerDraft, bodyOf as mcpBodyOf } from "./mcp-servers-editor.tsx";

const shape = updateProjectBodySchema.shape;

export interface SettingsFields {
  network: NetworkMode;
  hosts: string;
  verify: string;
  branchPrefix: string;
  requires: string;
  delivery: DeliveryMode;
  authorName: string;
  authorEmail: string;
  forgeKind: ForgeKind | "none";
  forgeUrl: string;
  forgeToken: string;
  mcpServers: McpServerDraft[];
  /** The project's variables that are set (names; their values stay on the server). */
  envKept: string[];
  /** New or changed variables, KEY=VALUE per line. */
  envText: string;
}

type Issues = ReadonlyArray<{ path: PropertyKey[]; message: string }>;

/** Adds another schema's problems to the form's fields, `fieldOf` naming the field of each. */
function addIssues(
  context: z.RefinementCtx,
  issues: Issues,
  fieldOf: (path: PropertyKey[]) => keyof SettingsFields,
  describe: (path: PropertyKey[], message: string) => string = (_path, message) => message,
) {
  for (const issue of issues) {
    context.addIssue({
      code: "custom",
      path: [fieldOf(issue.path)],
      message: describe(issue.path, issue.message),
    });
  }
}

export const settingsSchema = z
  .object({
    network: shape.network.unwrap(),
    hosts: lineList(z.array(z.string())),
    verify: lineList(shape.verifyCommands.unwrap()),
    branchPrefix: shape.branchPrefix.unwrap(),
    requires: wordList(shape.requires.unwrap()),
    delivery: shape.delivery.unwrap(),
    authorName: z.string(),
    authorEmail: z.string(),
    forgeKind: z.enum(["none", ...forgeKindSchema.options]),
    forgeUrl: z.string(),
    forgeToken: z.string(),
    mcpServers: z.array(z.custom<McpServerDraft>()),
    envKept: z.array(z.string()),
    envText: z.string(),
  })
  .superRefine((values, context) => {
    // Hosts are asked for, and checked, only for an allowlist.
    if (values.network === "allowlist") {
      const hosts = shape.allowedHosts.unwrap().safeParse(values.hosts);
      if (!hosts.success) addIssues(context, hosts.error.issues, () => "hosts");
    }
    if (values.authorName.trim() || values.authorEmail.trim()) {
      const author = commitAuthorSchema.safeParse({
        name: values.authorName,
        email: values.authorEmail,
      });
      if (!author.success) {
        addIssues(context, author.error.issues, (path) =>
          path[0] === "email" ? "authorEmail" : "authorName",
        );
      }
    }
    if (values.forgeKind !== "none") {
      const forge = forgeBodySchema.safeParse({
        kind: values.forgeKind,
        apiUrl: values.forgeUrl.trim(),
        ...(values.forgeToken.trim() ? { token: values.forgeToken } : {}),
      });
      if (!forge.success) {
        addIssues(context, forge.error.issues, (path) =>
          path[0] === "token" ? "forgeToken" : "forgeUrl",
        );
      }
    }
    const env = shape.env.unwrap().safeParse(envBodyOf(values.envKept, values.envText));
    if (!env.success) {
      addIssues(
        context,
        env.error.issues,
        () => "envText",
        (path, message) => `${path.join(".") || "variables"}: ${message}`,
      );
    }
    const servers = mcpServersBodySchema.safeParse(values.mcpServers.map(mcpBodyOf));
    if (!servers.success) {
      addIssues(
        context,
        servers.error.issues,
        () => "mcpServers",
        (path, message) => {
          const index = typeof path[0] === "number" ? path[0] : -1;
          const name = values.mcpServers[index]?.name || `server ${index + 1}`;
          return index < 0 ? message : `${name}: ${path.slice(1).join(".") || "it"} ${message}`;
        },
      );
    }
  });
export type SettingsValues = z.output<typeof settingsSchema>;

/** The body's fields the server may name, as the form's. */
export const settingsAliases: FieldAliases<SettingsFields> = {
  allowedHosts: "hosts",
  verifyCommands: "verify",
  "commitAuthor.email": "authorEmail",
  commitAuthor: "authorName",
  "forge.token": "forgeToken",
  forge: "forgeUrl",
  env: "envText",
};

export function fieldsOf(project: Project): SettingsFields {
  return {
    network: project.network,
    hosts: project.allowedHosts.join("\n"),
    verify: project.verifyCommands.join("\n"),
    branchPrefix: project.branchPrefix,
    requires: project.requires.join(" "),
    delivery: project.delivery,
    authorName: project.commitAuthor?.name ?? "",
    authorEmail: project.commitAuthor?.email ?? "",
    forgeKind: project.forge?.kind ?? "none",
    forgeUrl: project.forge?.apiUrl ?? "",
    forgeToken: "",
    mcpServers: project.mcpServers.map(draftOf),
    envKept: project.envKeys,
    envText: "",
  };
}

/** The `forge` field of the PATCH body, or undefined when the forge did not change. */
function forgeChange(
  before: Project["forge"],
  kind: ForgeKind | "none",
  apiUrl: string,
  token: string,
): UpdateProjectBody["forge"] | undefined {
  if (kind === "none") return before ? null : undefined;
  const url = apiUrl.trim();
  if (!token.trim() && before?.kind === kind && before.apiUrl === url) return undefined;
  // Without a new token the server keeps the one it holds.
  return { kind, apiUrl: url, ...(token.trim() ? { token: token.trim() } : {}) };
}

function sameAuthor(a: Project["commitAuthor"], b: Project["commitAuthor"]): boolean {
  return a?.name === b?.name && a?.email === b?.email;
}

/**
 * The PATCH body: the network, hosts and verification always; the rest only when changed (a
 * project stored before a field existed keeps its default), the MCP servers when edited.
 */
export function changesOf(
  project: Project,
  values: SettingsValues,
  serversEdited: boolean,
): UpdateProjectBody {
  // Both empty: the drone machine's own git identity.
  const author =
    values.authorName.trim() || values.authorEmail.trim()
      ? { name: values.authorName.trim(), email: values.authorEmail.trim() }
      : null;
  const forge = forgeChange(project.forge, values.forgeKind, values.forgeUrl, values.forgeToken);
  return {
    network: values.network,
    allowedHosts: values.hosts,
    verifyCommands: values.verify,
    ...(values.branchPrefix === project.branchPrefix ? {} : { branchPrefix: values.branchPrefix }),
    ...(values.delivery === project.delivery ? {} : { delivery: values.delivery }),
    ...(sameAuthor(author, project.commitAuthor) ? {} : { commitAuthor: author }),
    ...(forge === undefined ? {} : { forge }),
    ...(values.requires.join(" ") === project.requires.join(" ")
      ? {}
      : { requires: values.requires }),
    ...(serversEdited ? { mcpServers: values.mcpServers.map(mcpBodyOf) } : {}),
    ...(values.envText.trim() || values.envKept.join(" ") !== project.envKeys.join(" ")
      ? { env: envBodyOf(values.envKept, values.envText) }
      : {}),
  };
}

/**
 * The form after a save: secrets just sent are never shown again (an MCP server's env values
 * become names of kept ones, its token "set"; the forge token field empties).
 */
export function fieldsAfterSave(fields: SettingsFields): SettingsFields {
  return {
    ...fields,
    forgeToken: "",
    envKept: Object.keys(envBodyOf(fields.envKept, fields.envText)),
    envText: "",
    mcpServers: fields.mcpServers.map((draft) => {
      const body = mcpBodyOf(draft);
      return {
        ...draft,
        envText: "",
        keptEnv: Object.keys(body.env ?? {}),
        bearerToken: "",
        keepBearerToken: draft.kind === "url" && body.bearerToken !== null,
      };
    }),
  };
}
