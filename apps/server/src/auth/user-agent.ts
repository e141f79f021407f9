// A sign-in's device in a few words ("Firefox on macOS", "curl"), from the User-Agent it was made
// with, so the Account page tells one browser or script from another. Only these words are kept,
// never the header itself.

const browsers: ReadonlyArray<[RegExp, string]> = [
  [/\bEdg(?:e|A|iOS)?\//, "Edge"],
  [/\bOPR\//, "Opera"],
  [/\bFirefox\//, "Firefox"],
  [/\bFxiOS\//, "Firefox"],
  [/\bHeadlessChrome\//, "Chrome (headless)"],
  [/\bCriOS\//, "Chrome"],
  [/\bChrom(?:e|ium)\//, "Chrome"],
  [/\bVersion\/[\d.]+.*\bSafari\//, "Safari"],
];

const systems: ReadonlyArray<[RegExp, string]> = [
  [/\b(?:iPhone|iPad|iPod)\b/, "iOS"],
  [/\bAndroid\b/, "Android"],
  [/\bCrOS\b/, "ChromeOS"],
  [/\bMac OS X\b|\bMacintosh\b/, "macOS"],
  [/\bWindows\b/, "Windows"],
  [/\bLinux\b/, "Linux"],
];

/** Programs that name themselves first (`curl/8.5.0`, `node`), by that name. */
const program = /^([A-Za-z][\w.-]{0,39})(?:\/[\w.-]+)?(?:\s|$)/;

/** "Chrome on Linux", "curl", or null when there is nothing to go on. */
export function describeUserAgent(header: string | undefined): string | null {
  const agent = header?.slice(0, 1000).trim();
  if (!agent) return null;
  const browser = browsers.find(([pattern]) => pattern.test(agent))?.[1];
  const system = systems.find(([pattern]) => pattern.test(agent))?.[1];
  if (browser) return system ? `${browser} on ${system}` : browser;
  if (agent.startsWith("Mozilla/")) return system ? `a browser on ${system}` : "a browser";
  return agent.match(program)?.[1] ?? null;
}
