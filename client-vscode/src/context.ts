/**
 * Context from the editor for `tunacode.request` (docs/protocol.md, "Context from the
 * editor"): building the items, their labels for the panel's chips, and `@path` mentions in
 * a prompt. Pure (no `vscode` import), shared by the host and the webview, unit tested.
 */

import type { ContextItem, LspRange } from "./protocol";

/** The server's limits: a selection's text, an image's bytes, items per request. */
export const MAX_SELECTION_TEXT = 200_000;
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
export const MAX_CONTEXT_ITEMS = 50;
export const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** The last segment of a URI's path, decoded: `file:///w/src/calc.py` -> `calc.py`. */
export function uriName(uri: string): string {
  const raw = uri.replace(/[?#].*$/, "").split("/").filter(Boolean).pop() ?? uri;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * A selection item. Its text goes along (the editor's, unsaved edits included) unless it is
 * over the server's limit; then the server reads the range itself and cuts it, saying so.
 */
export function selectionItem(uri: string, range: LspRange, text: string): ContextItem {
  return text.length <= MAX_SELECTION_TEXT ? { type: "selection", uri, range, text } : { type: "selection", uri, range };
}

/** What a chip says: `calc.py`, `calc.py:3-5`, `image/png, 12 KB`. */
export function contextLabel(item: ContextItem): string {
  switch (item.type) {
    case "file":
      return uriName(item.uri);
    case "selection":
    case "diagnostic": {
      const first = item.range.start.line + 1;
      // A selection that ends at column 0 of a line does not include that line.
      const lastLine = item.range.end.character === 0 && item.range.end.line > item.range.start.line ? item.range.end.line : item.range.end.line + 1;
      const where = first === lastLine ? `${first}` : `${first}-${lastLine}`;
      return item.type === "selection" ? `${uriName(item.uri)}:${where}` : `${uriName(item.uri)}:${where} ${item.message.slice(0, 40)}`;
    }
    case "image":
      return `${item.mimeType}, ${formatBytes(Math.floor((item.data.length * 3) / 4))}`;
  }
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Paths mentioned as `@path` in a prompt (`@src/calc.py`, `@"name with spaces.py"`), in
 * order, without duplicates. An e-mail address (`me@host.org`) is not a mention: the `@`
 * must start the prompt or follow whitespace or an opening bracket.
 */
export function mentionedPaths(prompt: string): string[] {
  const out: string[] = [];
  const re = /(?:^|[\s([{])@(?:"([^"\n]+)"|([\w./\\-]*[\w/\\-]))/g;
  for (let m = re.exec(prompt); m; m = re.exec(prompt)) {
    const p = (m[1] ?? m[2] ?? "").trim();
    if (p && !out.includes(p)) out.push(p);
  }
  return out;
}

/** Dedupes context items (same type and target); keeps the first; at most the server's limit. */
export function mergeContext(items: ContextItem[]): ContextItem[] {
  const seen = new Set<string>();
  const out: ContextItem[] = [];
  for (const item of items) {
    const key = item.type === "image" ? `image:${item.data.length}:${item.data.slice(0, 64)}` : `${item.type}:${item.uri}:${"range" in item ? JSON.stringify(item.range) : ""}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(item);
  }
  return out.slice(0, MAX_CONTEXT_ITEMS);
}

/**
 * A relative path that stays inside its folder: not absolute (`/x`, `C:\\x`, `\\\\server`), no
 * `..` segment, no NUL. Paths from the server (changed files) and from `@mentions` pass
 * this before the extension reads or writes them.
 */
export function isInsidePath(file: string): boolean {
  if (!file || file.includes("\0") || /^([\\/]|[a-zA-Z]:)/.test(file)) return false;
  return !file.split(/[\\/]/).some((part) => part === "..");
}

/** The URIs of a `text/uri-list` drop (comments and blank lines skipped), at most 50. */
export function parseUriList(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .slice(0, MAX_CONTEXT_ITEMS);
}
