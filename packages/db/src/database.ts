// Opens a connection and binds every model to it, so tests and processes never share
// mongoose's global state and each can use its own database.
import mongoose, { type Connection } from "mongoose";
import { apiTokenModel } from "./models/api-token.ts";
import { chatSessionModel } from "./models/chat-session.ts";
import { chatTurnModel } from "./models/chat-turn.ts";
import { droneModel } from "./models/drone.ts";
import { forgeEventModel } from "./models/forge-event.ts";
import { inviteModel } from "./models/invite.ts";
import { projectModel } from "./models/project.ts";
import { providerModel } from "./models/provider.ts";
import { registrationTokenModel } from "./models/registration-token.ts";
import { sessionQueueModel } from "./models/session-queue.ts";
import { turnEventModel } from "./models/turn-event.ts";
import { turnImageModel } from "./models/turn-image.ts";
import { turnMessageModel } from "./models/turn-message.ts";
import { userModel } from "./models/user.ts";
import { webhookModel } from "./models/webhook.ts";
import { webhookDeliveryModel } from "./models/webhook-delivery.ts";

/** Binds every model to `connection`. */
export function createModels(connection: Connection) {
  return {
    User: userModel(connection),
    ApiToken: apiTokenModel(connection),
    Invite: inviteModel(connection),
    RegistrationToken: registrationTokenModel(connection),
    Drone: droneModel(connection),
    Provider: providerModel(connection),
    Project: projectModel(connection),
    ChatSession: chatSessionModel(connection),
    ChatTurn: chatTurnModel(connection),
    TurnEvent: turnEventModel(connection),
    SessionQueue: sessionQueueModel(connection),
    TurnMessage: turnMessageModel(connection),
    TurnImage: turnImageModel(connection),
    Webhook: webhookModel(connection),
    WebhookDelivery: webhookDeliveryModel(connection),
    ForgeEvent: forgeEventModel(connection),
  };
}

export type Models = ReturnType<typeof createModels>;

export interface Database {
  connection: Connection;
  models: Models;
  /** Closes the connection. */
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** Create the indexes every query relies on; default true. */
  ensureIndexes?: boolean;
  /** How long to wait for the server; default 10 s. */
  serverSelectionTimeoutMs?: number;
  /** Connections in the pool; default 20. */
  maxPoolSize?: number;
  /**
   * Queue operations in mongoose while disconnected (up to 10 s, then a "buffering timed out"
   * error); default true. False hands them to the driver, which waits serverSelectionTimeoutMs.
   */
  bufferCommands?: boolean;
}

/**
 * Connects to `url` (which names the database) and returns the bound models.
 * @example const db = await openDatabase(databaseUrl(mongoUrl, "gadget")); await db.models.User.findOne();
 */
export async function openDatabase(
  url: string,
  options: OpenDatabaseOptions = {},
): Promise<Database> {
  const connection = mongoose.createConnection(url, {
    autoIndex: false,
    autoCreate: false,
    serverSelectionTimeoutMS: options.serverSelectionTimeoutMs ?? 10_000,
    maxPoolSize: options.maxPoolSize ?? 20,
    bufferCommands: options.bufferCommands ?? true,
  });
  await connection.asPromise();
  const models = createModels(connection);
  if (options.ensureIndexes ?? true) await ensureIndexes(models);
  return {
    connection,
    models,
    close: async () => {
      await connection.close();
    },
  };
}

/** Creates every declared index (idempotent). */
export async function ensureIndexes(models: Models): Promise<void> {
  for (const model of Object.values(models)) {
    await model.createCollection().catch((error: unknown) => {
      // Another process may have created it first.
      if ((error as { codeName?: string }).codeName !== "NamespaceExists") throw error;
    });
    await model.createIndexes();
  }
}
