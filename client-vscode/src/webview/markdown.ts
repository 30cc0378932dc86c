/**
 * Markdown to safe HTML for the panel: markdown-it with raw HTML disabled, then DOMPurify,
 * so nothing a model writes can run script or load content the CSP would not allow.
 */

import DOMPurify from "dompurify";
import MarkdownIt from "markdown-it";
import { highlight } from "./highlight";
import { taskLists } from "./taskList";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false, highlight }).use(taskLists);

// Links open through VS Code (it intercepts anchor clicks); keep them from targeting frames.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("rel", "noreferrer noopener");
  }
  if (node.tagName === "IMG") {
    // Remote images are blocked by the CSP; show the alt text instead of a broken frame.
    node.replaceWith(document.createTextNode(node.getAttribute("alt") ?? ""));
  }
});

export function renderMarkdown(text: string): string {
  return DOMPurify.sanitize(md.render(text), {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ["style", "form", "input", "button", "iframe"],
    FORBID_ATTR: ["style"],
  });
}
