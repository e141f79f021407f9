// The bridge inside a sandbox whose project allows some hosts: the sandbox has its own empty
// network namespace, so a loopback port there is piped to the filtering proxy's unix socket
// (bound into the sandbox), and the command's HTTP(S)_PROXY points at that port.

/** The port the bridge listens on inside the sandbox's own network namespace. */
export const bridgePort = 3128;

/** Where the proxy's unix socket appears inside the sandbox. */
export const bridgeSocketPath = "/run/gadget/proxy.sock";

/**
 * Source run with `node -e` as the sandbox's first process: `node -e <source> <socket> <port>
 * <program> <args…>`. It listens, then runs the program with the same stdio and exits as it did.
 * Plain JavaScript on purpose: it must run in any Node the drone runs on, with no files to bind.
 */
export const bridgeSource = `
const net = require("node:net");
const { spawn } = require("node:child_process");
const [socketPath, port, program, ...args] = process.argv.slice(1);
const server = net.createServer((inside) => {
  const outside = net.connect(socketPath);
  inside.pipe(outside);
  outside.pipe(inside);
  inside.on("error", () => outside.destroy());
  outside.on("error", () => inside.destroy());
});
server.listen(Number(port), "127.0.0.1", () => {
  const child = spawn(program, args, { stdio: "inherit" });
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("error", (error) => {
    process.stderr.write("gadget sandbox: could not start " + program + ": " + error.message + "\\n");
    process.exit(error.code === "EACCES" ? 126 : 127);
  });
  child.on("exit", (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
});
`;

/** Proxy variables for a command whose traffic must go through the bridge. */
export function proxyEnvironment(port = bridgePort): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    ALL_PROXY: url,
    all_proxy: url,
    npm_config_proxy: url,
    npm_config_https_proxy: url,
  };
}

/** Proxy-related variables a command must not inherit from the drone's environment. */
export const proxyVariableNames: readonly string[] = [
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "all_proxy",
  "no_proxy",
  "npm_config_proxy",
  "npm_config_https_proxy",
  "npm_config_noproxy",
];
