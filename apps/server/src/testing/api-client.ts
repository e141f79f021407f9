// The REST and /ide clients of the server's tests live in @gadget/testkit/wire (other apps' tests
// use them too); this path keeps the server's test imports short.
export * from "@gadget/testkit/wire";
