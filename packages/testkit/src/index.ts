// @gadget/testkit: stand-ins for tests across the workspace. Depends on nothing but node.

export * from "./drone-package.ts";
export * from "./forge-stand-in.ts";
export * from "./git-http-server.ts";
export * from "./processes.ts";
export * from "./scripted-model.ts";
export * from "./temp-dirs.ts";
