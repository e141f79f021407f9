// Reading the forge's repository from a project's git URL, in the forms people paste.
import { describe, expect, it } from "vitest";
import { forgeRepository, gitUrlPath } from "./forge-repository.ts";

describe("the forge repository of a git URL", () => {
  it("reads GitHub's owner and repository from https, ssh and scp-like URLs", () => {
    for (const url of [
      "https://github.com/ada/engine.git",
      "https://github.com/ada/engine",
      "https://github.com/ada/engine/",
      "https://ada:ghp_secret@github.com/ada/engine.git",
      "git@github.com:ada/engine.git",
      "ssh://git@github.com:22/ada/engine.git",
      "ssh://git@github.com/ada/engine",
      "https://github.example.com/ada/engine.git",
    ]) {
      expect(forgeRepository("github", url), url).toEqual({
        name: "ada/engine",
        apiPath: "/repos/ada/engine",
        owner: "ada",
        repo: "engine",
      });
      expect(forgeRepository("gitea", url).apiPath, url).toBe("/repos/ada/engine");
    }
  });

  it("reads GitLab's whole project path, nested groups URL-encoded as one segment", () => {
    expect(forgeRepository("gitlab", "git@gitlab.com:acme/web/app.git")).toMatchObject({
      name: "acme/web/app",
      apiPath: "/projects/acme%2Fweb%2Fapp",
    });
    expect(forgeRepository("gitlab", "https://gitlab.example.org/acme/app.git").apiPath).toBe(
      "/projects/acme%2Fapp",
    );
    expect(forgeRepository("gitlab", "ssh://git@gitlab.com:2222/a/b/c/d.git").apiPath).toBe(
      "/projects/a%2Fb%2Fc%2Fd",
    );
  });

  it("refuses a URL naming no repository, without the credential in its words", () => {
    expect(() => forgeRepository("github", "https://ada:s3cret@github.com/engine.git")).toThrow(
      /names no GitHub repository \(owner\/repo\): https:\/\/github\.com\/engine\.git/,
    );
    expect(() => forgeRepository("gitlab", "/srv/git/app.git")).toThrow(/names no GitLab project/);
    expect(gitUrlPath("not a url")).toBeNull();
    expect(gitUrlPath("C:\\repos\\app")).toBeNull();
  });
});
