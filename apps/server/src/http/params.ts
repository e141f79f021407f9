// Small helpers shared by the routes.
import { UserError } from "@gadget/protocol";
import { Types } from "mongoose";

/** A route's `:id` as an ObjectId; anything else is simply not found (never a 400 that leaks shape). */
export function idParam(params: unknown, name = "id", what = "Object"): Types.ObjectId {
  const value = (params as Record<string, string | undefined>)[name];
  if (!value || !Types.ObjectId.isValid(value) || !/^[0-9a-f]{24}$/i.test(value)) {
    throw new UserError("not_found", `${what} not found`);
  }
  return new Types.ObjectId(value);
}
