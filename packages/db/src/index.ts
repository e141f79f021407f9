// @gadget/db: the server's mongoose models, bound to a connection by createModels/openDatabase.
export {
  createModels,
  type Database,
  ensureIndexes,
  type Models,
  type OpenDatabaseOptions,
  openDatabase,
} from "./database.ts";
export { isDatabaseError, isDatabaseUnavailable, isDuplicateKeyError } from "./errors.ts";
export type { ApiTokenDocument } from "./models/api-token.ts";
export type { ChatSessionDocument } from "./models/chat-session.ts";
export {
  activeTurnStatuses,
  type ChatTurnDocument,
  type PendingApproval,
  type TurnImageRef,
} from "./models/chat-turn.ts";
export type { DroneDocument } from "./models/drone.ts";
export type { ForgeEventDocument } from "./models/forge-event.ts";
export type { InviteDocument } from "./models/invite.ts";
export type {
  ProjectDocument,
  ProjectForgeDocument,
  ProjectMcpServerDocument,
} from "./models/project.ts";
export type { ProviderDocument } from "./models/provider.ts";
export type { RegistrationTokenDocument } from "./models/registration-token.ts";
export type { SessionQueueDocument } from "./models/session-queue.ts";
export type { TurnEventDocument } from "./models/turn-event.ts";
export type { TurnImageDocument } from "./models/turn-image.ts";
export type { TurnMessageDocument, TurnMessageStatus } from "./models/turn-message.ts";
export type { UserDocument } from "./models/user.ts";
export type { WebhookDocument } from "./models/webhook.ts";
export type { WebhookDeliveryDocument } from "./models/webhook-delivery.ts";
