// @gadget/testkit: stand-ins for tests across the workspace. Depends on nothing but node.
export * from "./scripted-model.ts";
