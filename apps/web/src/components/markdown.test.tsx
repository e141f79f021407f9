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
