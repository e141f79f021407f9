// A project's git URL as the API shows it: a password (or a token written as the user name) is
// never answered, only that one is set.

/**
 * `https://ada:t0ken@host/x.git` → `https://ada:***@host/x.git`; `https://t0ken@host/x.git` →
 * `https://***@host/x.git`; anything else as it is.
 * @example maskedGitUrl("https://ada:s3cret@git.example/app.git") // "https://ada:***@git.example/app.git"
 */
export function maskedGitUrl(gitUrl: string): string {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/@\s]+)@/i.exec(gitUrl);
  if (!match) return gitUrl;
  const [whole, scheme, userInfo] = match as unknown as [string, string, string];
  const colon = userInfo.indexOf(":");
  const shown = colon === -1 ? "***" : `${userInfo.slice(0, colon)}:***`;
  return `${scheme}${shown}@${gitUrl.slice(whole.length)}`;
}
