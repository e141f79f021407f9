// Markdown answers: formatting, highlighted code, and nothing unsafe gets through.
import { render } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { Markdown, renderMarkdown } from "./markdown.tsx";

describe("Markdown", () => {
  it("renders formatting, tables and highlighted code", () => {
    const { container } = render(
      <Markdown
        source={"# Done\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```ts\nconst x: number = 1;\n```"}
      />,
    );
    expect(container.querySelector("h1")).toHaveTextContent("Done");
    expect(container.querySelector("table td")).toHaveTextContent("1");
    expect(container.querySelector("pre.code-block")?.getAttribute("data-lang")).toBe("ts");
    expect(container.querySelector(".hljs-keyword")).toHaveTextContent("const");
  });

  it("removes scripts, event handlers and javascript: links", () => {
    const html = renderMarkdown(
      '<script>alert(1)</script><img src="x" onerror="alert(2)"> [click](javascript:void)',
    );
    expect(html).not.toContain("<script");
    expect(html).not.toContain("onerror");
    expect(html).not.toMatch(/href="javascript/);
  });

  it("opens links in a new tab", () => {
    expect(renderMarkdown("[docs](https://example.test/docs)")).toContain('target="_blank"');
  });
});

/** The rendered answer as a DOM fragment, to ask about elements rather than substrings. */
function rendered(source: string): HTMLElement {
  const { container } = render(<Markdown source={source} />);
  return container;
}

describe("Markdown from a hostile model", () => {
  it("shows images as links and never as <img>, so nothing is fetched", () => {
    const answer = rendered(
      '<img src="https://evil.example/beacon?x=1"> ![chart](https://evil.example/md-beacon) ' +
        "![inline](data:image/png;base64,AAAA)",
    );
    expect(answer.querySelector("img")).toBeNull();
    const links = [...answer.querySelectorAll("a")];
    expect(links.map((link) => [link.textContent, link.getAttribute("href")])).toEqual([
      ["image: https://evil.example/beacon?x=1", "https://evil.example/beacon?x=1"],
      ["image: chart", "https://evil.example/md-beacon"],
    ]);
    for (const link of links) {
      expect(link.getAttribute("target")).toBe("_blank");
      expect(link.getAttribute("rel")).toBe("noopener noreferrer nofollow");
    }
    // A data: image is not a link target: only its label is left.
    expect(answer).toHaveTextContent("image: inline");
  });

  it("keeps no form controls, styles, frames or embeds", () => {
    const answer = rendered(
      '<form action="https://evil.example/phish"><input type="password" name="password">' +
        "<textarea>notes</textarea><select><option>a</option></select><button>Sign in</button></form>" +
        '<style>body { display: none }</style><iframe src="https://evil.example/"></iframe>' +
        '<object data="https://evil.example/x.swf"></object><embed src="https://evil.example/x">' +
        "<svg><a href='https://evil.example'><text>svg</text></a></svg>" +
        "\n\n- [x] a task stays readable",
    );
    for (const tag of ["form", "input", "button", "textarea", "select", "option", "style"]) {
      expect(answer.querySelector(tag), tag).toBeNull();
    }
    for (const tag of ["iframe", "object", "embed", "svg"]) {
      expect(answer.querySelector(tag), tag).toBeNull();
    }
    expect(answer.querySelector("li")).toHaveTextContent("☑ a task stays readable");
  });

  it("removes style, srcset and on* attributes and the app's own classes", () => {
    const answer = rendered(
      '<p style="position:fixed;inset:0" onclick="alert(1)" class="connection-banner">Log in again</p>' +
        '<a href="https://example.test" onmouseover="alert(2)" ping="https://evil.example/">x</a>' +
        '<img src="x" onerror="alert(3)" srcset="https://evil.example/a.png 1x">',
    );
    expect(answer.querySelector("p")).toHaveTextContent("Log in again");
    expect(
      answer.querySelectorAll("[style], [onclick], [onmouseover], [onerror], [srcset], [ping]"),
    ).toHaveLength(0);
    expect(answer.querySelector("p")?.hasAttribute("class")).toBe(false);
    expect(answer.innerHTML).not.toContain("alert(");
  });

  it("keeps http(s) and mailto links, and leaves javascript:, data: and relative ones as text", () => {
    const answer = rendered(
      "[web](https://example.test/a) [mail](mailto:ada@example.test) [js](javascript:alert(1)) " +
        '[data](data:text/html,hi) [here](/projects) <a href="java&#x09;script:alert(2)">tab</a> ' +
        '<a href=" JAVASCRIPT:alert(3)">upper</a>',
    );
    const hrefs = [...answer.querySelectorAll("a")].map((link) => link.getAttribute("href"));
    expect(hrefs).toEqual([
      "https://example.test/a",
      "mailto:ada@example.test",
      null,
      null,
      null,
      null,
      null,
    ]);
    expect(answer).toHaveTextContent("web mail js data here tab upper");
  });

  it("does not let a quote in a link's address or title inject attributes", () => {
    const attacks = [
      '[x](https://a.example/" style="position:fixed;inset:0;background:red)',
      '[x](https://a.example/"style="position:fixed;inset:0;background:red)',
      '[x](<https://a.example/" style="position:fixed;inset:0" onclick="alert(1)">)',
      "[x](https://a.example 'a\" style=\"position:fixed;inset:0')",
      '![x](https://a.example/" style="position:fixed;inset:0)',
      '```ts"style="position:fixed;inset:0\ncode\n```',
    ];
    for (const attack of attacks) {
      const answer = rendered(attack);
      expect(answer.querySelectorAll("[style], [onclick], style"), attack).toHaveLength(0);
      for (const link of answer.querySelectorAll("a")) {
        expect(link.getAttributeNames().sort(), attack).toEqual(
          expect.arrayContaining(["href", "rel", "target"]),
        );
        expect(
          link
            .getAttributeNames()
            .filter((name) => !["href", "rel", "target", "title"].includes(name)),
          attack,
        ).toEqual([]);
      }
    }
    // The quote stays inside the attribute it came in.
    const titled = rendered("[x](https://a.example 'a\" style=\"position:fixed')").querySelector(
      "a",
    );
    expect(titled?.getAttribute("title")).toBe('a" style="position:fixed');
  });
});
