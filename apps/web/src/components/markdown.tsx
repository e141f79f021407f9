// Markdown answers rendered to sanitised HTML, with code highlighted by a locally bundled highlight.js.
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Marked } from "marked";
import { memo, useDeferredValue, useMemo } from "react";

const languages = {
  bash,
  css,
  diff,
  go,
  javascript,
  json,
  markdown,
  python,
  rust,
  shell,
  sql,
  typescript,
  xml,
  yaml,
};
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["js", "jsx", "mjs", "cjs"], { languageName: "javascript" });
hljs.registerAliases(["sh", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["yml"], { languageName: "yaml" });

/** Escapes text for element content and double- or single-quoted attribute values. */
function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/** Highlights code for one language, or returns it escaped when the language is unknown. */
export function highlightCode(code: string, language: string | undefined): string {
  const name = language?.trim().split(/\s+/)[0]?.toLowerCase();
  if (name && hljs.getLanguage(name)) {
    return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
  }
  return escapeHtml(code);
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    code({ text, lang }) {
      const name = lang?.trim().split(/\s+/)[0] ?? "";
      const label = name ? ` data-lang="${escapeHtml(name)}"` : "";
      return `<pre class="code-block"${label}><code class="hljs">${highlightCode(text, name)}</code></pre>`;
    },
    // A task list's box as a character: model output keeps no <input> at all.
    checkbox({ checked }) {
      return checked ? "☑ " : "☐ ";
    },
  },
});

/**
 * What model output may contain: marked's formatting and harmless inline HTML. Left out on
 * purpose: forms and their controls (phishing), style, iframe/object/embed, media and img
 * (images become links, see below), svg/math.
 */
const allowedTags = [
  ...["p", "br", "hr", "div", "span", "blockquote", "pre", "code"],
  ...["h1", "h2", "h3", "h4", "h5", "h6"],
  ...["em", "strong", "b", "i", "u", "s", "del", "ins", "mark", "small", "sub", "sup", "kbd"],
  ...["abbr", "cite", "q", "ul", "ol", "li", "dl", "dt", "dd", "details", "summary", "a"],
  ...["table", "caption", "thead", "tbody", "tfoot", "tr", "th", "td", "colgroup", "col"],
];
/** No `style`, `srcset`, `on*`, `id`/`name`; `target` and `rel` are set by the link hook. */
const allowedAttributes = [
  ...["href", "title", "class", "align", "colspan", "rowspan", "start", "open"],
  "data-lang",
];
/**
 * The classes our renderer and highlight.js emit; any other class is dropped so an answer cannot
 * borrow the app's own classes (a fixed banner, a button) to look like the IDE.
 */
const rendererClass = /^(?:hljs(?:-[\w-]+)?|language-[\w-]+|code-block|[a-z]+_+)$/;
const linkSchemes = new Set(["http:", "https:", "mailto:"]);

/** Whether `href` is an absolute http(s) or mailto URL: never javascript:, data: or relative. */
function isAllowedHref(href: string): boolean {
  try {
    return linkSchemes.has(new URL(href).protocol);
  } catch {
    return false;
  }
}

// Our own instance, so these hooks never apply to another caller of DOMPurify.
const purifier = DOMPurify(window);

// An image is shown as a link (or as text) and never fetched: a prompt-injected model could
// otherwise send data out in an image URL while the answer streams. The replacement is
// inserted after the <img>, so DOMPurify's walk sanitises it like the rest; the <img> is then
// removed because it is not allowed.
purifier.addHook("uponSanitizeElement", (node, data) => {
  if (data.tagName !== "img") return;
  const image = node as Element;
  const source = image.getAttribute("src")?.trim() ?? "";
  const label = `image: ${image.getAttribute("alt")?.trim() || source || "(no address)"}`;
  // DOMPurify's own inert document, where nothing loads.
  const inert = image.ownerDocument;
  // Anchors do not nest: inside a link the image is only its label.
  if (isAllowedHref(source) && !image.closest("a")) {
    const link = inert.createElement("a");
    link.setAttribute("href", source);
    link.textContent = label;
    image.after(link);
  } else {
    image.after(inert.createTextNode(label));
  }
});

purifier.addHook("uponSanitizeAttribute", (_node, data) => {
  if (data.attrName !== "class") return;
  const kept = data.attrValue.split(/\s+/).filter((name) => rendererClass.test(name));
  data.attrValue = kept.join(" ");
  data.keepAttr = kept.length > 0;
});

// Links open in a new tab with no opener and no referrer; a link to anything but http(s) or
// mailto stays as its text.
purifier.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName !== "A") return;
  const href = node.getAttribute("href");
  if (href !== null && isAllowedHref(href)) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  } else {
    node.removeAttribute("href");
  }
});

/**
 * Markdown to safe HTML: no scripts, handlers, styles, forms or embeds, images as links, and
 * links to http(s) and mailto only.
 * @example renderMarkdown("![chart](https://example.test/c.png)") // an <a> "image: chart", no <img>
 */
export function renderMarkdown(source: string): string {
  const html = marked.parse(source, { async: false });
  return purifier.sanitize(html, {
    ALLOWED_TAGS: allowedTags,
    ALLOWED_ATTR: allowedAttributes,
    ALLOW_DATA_ATTR: false,
  });
}

/** A block of rendered markdown; heavy re-renders of a streaming answer are deferred. */
export const Markdown = memo(function Markdown({ source }: { source: string }) {
  const deferred = useDeferredValue(source);
  const html = useMemo(() => renderMarkdown(deferred), [deferred]);
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
});
