// What a failed `git ls-remote` says, in kinds a user can act on, with credentials removed.
import { describe, expect, it } from "vitest";
import { remoteProblem, withoutCredentials } from "./remote-check.ts";

describe("a git URL check's words", () => {
  it("removes user names and passwords from URLs anywhere in git's text", () => {
    expect(
      withoutCredentials(
        "fatal: Authentication failed for 'https://ada:s3cret@git.example.com/app.git/'",
      ),
    ).toBe("fatal: Authentication failed for 'https://***@git.example.com/app.git/'");
    expect(withoutCredentials("ssh://git@host/x and http://token@h/y")).toBe(
      "ssh://***@host/x and http://***@h/y",
    );
    expect(withoutCredentials("git@github.com:org/repo.git")).toBe("git@github.com:org/repo.git");
  });

  it("tells a missing repository, refused credentials and an unreachable remote apart", () => {
    expect(remoteProblem("fatal: '/srv/x.git' does not appear to be a git repository")).toBe(
      "not_found",
    );
    expect(
      remoteProblem("remote: Repository not found.\nfatal: repository 'https://h/x/' not found"),
    ).toBe("not_found");
    expect(
      remoteProblem("fatal: could not read Username for 'https://h': terminal prompts disabled"),
    ).toBe("authentication_failed");
    expect(
      remoteProblem("fatal: unable to access 'https://h/': The requested URL returned error: 403"),
    ).toBe("authentication_failed");
    expect(remoteProblem("fatal: unable to access 'https://h/': Could not resolve host: h")).toBe(
      "unreachable",
    );
    expect(remoteProblem("fatal: unable to access 'http://127.0.0.1:1/': Failed to connect")).toBe(
      "unreachable",
    );
  });
});
