/**
 * What a tool card shows a person (issue 31, items 11-12), as pure functions: the row's text
 * from the server's `title` (never a raw tool name), the result without what was written for
 * the model (read_file's `12:d808|` line references, "call the tool again" advice), and a
 * diff without its `---`/`+++`/`@@` header lines. No DOM, so node's test runner covers it.
 */

import type { ToolKind } from "../protocol";

/** Tool calls whose card would only repeat something the panel shows elsewhere (the plan box). */
const HIDDEN_TOOLS: ReadonlySet<string> = new Set(["todo_write"]);

export function isHiddenTool(name: string): boolean {
  return HIDDEN_TOOLS.has(name);
}

/** A tool name as words: `list_files` -> `List files` (only when the server sent no title). */
export function humanToolName(name: string): string {
  const words = name.replace(/[_-]+/g, " ").replace(/([a-z])([A-Z])/g, "$1 $2").trim().toLowerCase();
  return words ? `${words[0].toUpperCase()}${words.slice(1)}` : "Tool";
}

const KIND_VERB: Partial<Record<ToolKind, string>> = {
  read: "Read",
  edit: "Edit",
  delete: "Delete",
  move: "Move",
  search: "Search",
  execute: "Run",
  fetch: "Fetch",
  think: "Think",
};

/** The card's row: the server's title; else a verb from its kind, or the name in words, and the summary. */
export function toolRowText(tool: { name: string; title?: string; toolKind?: ToolKind; summary?: string }): string {
  if (tool.title) return tool.title;
  const head = (tool.toolKind && KIND_VERB[tool.toolKind]) || humanToolName(tool.name);
  const summary = tool.summary?.startsWith(`${tool.name}: `) ? tool.summary.slice(tool.name.length + 2) : tool.summary;
  return summary ? `${head} ${summary}` : head;
}

/** read_file's line references (`12:d808|text`): the model's, not the person's. */
const LINE_REF = /^(\s*)\d+:[0-9a-f]{4}\|/gm;
/** Sentences written to steer the model's next call. */
const FOR_THE_MODEL = [
  / ?Do not retry it unchanged[^.\n]*\.?/g,
  /,? then call the tool again\.?/g,
];

/** A tool result as a person reads it. */
export function resultForPerson(text: string): string {
  let out = text.replace(LINE_REF, "$1");
  for (const pattern of FOR_THE_MODEL) out = out.replace(pattern, (m) => (m.startsWith(",") ? "." : ""));
  return out;
}

export type DiffLineKind = "add" | "del" | "ctx" | "gap";

/**
 * A unified diff's lines for a person: the `diff`/`index`/`---`/`+++` headers dropped, each
 * `@@` hunk header a gap marker between hunks (none before the first).
 */
export function diffForPerson(diff: string): { kind: DiffLineKind; text: string }[] {
  const out: { kind: DiffLineKind; text: string }[] = [];
  for (const text of diff.split("\n")) {
    if (/^(diff |index |--- |\+\+\+ |---$|\+\+\+$)/.test(text)) continue;
    if (text.startsWith("@@")) {
      if (out.length > 0) out.push({ kind: "gap", text: "⋯" });
      continue;
    }
    if (text.startsWith("\\ ")) continue; // "\ No newline at end of file"
    if (text.startsWith("+")) out.push({ kind: "add", text });
    else if (text.startsWith("-")) out.push({ kind: "del", text });
    else out.push({ kind: "ctx", text });
  }
  while (out.length > 0 && out[out.length - 1].kind === "ctx" && out[out.length - 1].text === "") out.pop();
  return out;
}

/** Whether a result text is a unified diff (an edit's applied change): then it is shown coloured. */
export function looksLikeDiff(text: string): boolean {
  return /^@@ -\d+(,\d+)? \+\d+(,\d+)? @@/m.test(text) && /^[+-]/m.test(text);
}

/**
 * The unified diff inside an edit's result (the rest of the result is written for the model:
 * "the edit is in the editor's buffer...", diagnostics to re-check): from its first `---` or
 * `@@` line through the last line that belongs to a diff. Undefined without one.
 */
export function diffIn(text: string): string | undefined {
  if (!looksLikeDiff(text)) return undefined;
  const lines = text.split("\n");
  let start = lines.findIndex((l, i) => (l.startsWith("--- ") && lines[i + 1]?.startsWith("+++ ")) || /^@@ -\d/.test(l));
  if (start < 0) return undefined;
  const out: string[] = [];
  for (; start < lines.length; start++) {
    const line = lines[start];
    if (!/^([ +\-\\]|@@ |--- |\+\+\+ )/.test(line)) break;
    out.push(line);
  }
  return out.length > 0 ? `${out.join("\n")}\n` : undefined;
}
