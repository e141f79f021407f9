// update_document: the model's living document (state only; the engine emits document_update).
import { defineTool } from "@gadget/agent";
import { z } from "zod";

export const updateDocumentInput = z.object({
  sections: z
    .record(z.string(), z.string())
    .describe(
      'Sections to add to, by name, e.g. {"plan": "…", "findings": "…", "confidence": "medium"}',
    ),
});

/** Renders sections as markdown headings, for the model. */
export function renderDocument(sections: Readonly<Record<string, string>>): string {
  const names = Object.keys(sections);
  if (names.length === 0) return "(the document is empty)";
  return names.map((name) => `## ${name}\n${sections[name]}`).join("\n\n");
}

/** The update_document tool. */
export function createUpdateDocumentTool() {
  return defineTool({
    name: "update_document",
    description: [
      "Updates your living document: named sections (e.g. plan, findings, work_queue, confidence) that you keep across passes.",
      "Text is appended to a section with a pass label; `confidence` is replaced. Returns the whole document.",
      "Use it to record the plan, what you learned and what is left, so nothing is lost between passes.",
    ].join(" "),
    inputSchema: updateDocumentInput,
    permission: "read",
    describe: (input) => `Update document: ${Object.keys(input.sections).join(", ")}`,
    async execute(input, context) {
      const sections = context.document.update(input.sections);
      const names = Object.keys(input.sections);
      return {
        ok: true,
        output: renderDocument(sections),
        summary: names.length > 0 ? `Updated document: ${names.join(", ")}` : "Document unchanged",
        data: { sections },
      };
    },
  });
}
