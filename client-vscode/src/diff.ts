/**
 * Unified diffs (as the server sends them: git's hunks, `--- a/x`, `+++ b/x`) applied to a
 * file's text, both ways. Pure and unit tested: the Changes view rebuilds a file's "before"
 * from its current text and undoes one file's change with it.
 *
 * Exact to the byte for LF text: `\ No newline at end of file` is honoured, a hunk that does
 * not match the text (the file changed since) gives `undefined`, never a guess.
 */

interface Hunk {
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
  oldLines: string[];
  newLines: string[];
  /** The old / new side's last line has no newline (`\ No newline at end of file`). */
  oldNoEol: boolean;
  newNoEol: boolean;
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

/** The hunks of a unified diff; undefined when it has none (binary) or is malformed. */
export function parseHunks(diff: string): Hunk[] | undefined {
  const lines = diff.split("\n");
  const hunks: Hunk[] = [];
  let i = 0;
  while (i < lines.length) {
    const header = HUNK_HEADER.exec(lines[i]);
    i++;
    if (!header) continue;
    const hunk: Hunk = {
      oldStart: Number(header[1]),
      oldCount: header[2] === undefined ? 1 : Number(header[2]),
      newStart: Number(header[3]),
      newCount: header[4] === undefined ? 1 : Number(header[4]),
      oldLines: [],
      newLines: [],
      oldNoEol: false,
      newNoEol: false,
    };
    let last = "";
    while (i < lines.length && (hunk.oldLines.length < hunk.oldCount || hunk.newLines.length < hunk.newCount)) {
      const line = lines[i];
      const tag = line.charAt(0);
      const body = line.slice(1);
      if (tag === "\\") {
        markNoEol(hunk, last);
      } else if (tag === "+") {
        hunk.newLines.push(body);
      } else if (tag === "-") {
        hunk.oldLines.push(body);
      } else if (tag === " " || line === "") {
        // An empty context line may have lost its leading space on the way.
        hunk.oldLines.push(body);
        hunk.newLines.push(body);
      } else {
        return undefined;
      }
      if (tag !== "\\") last = tag === "" ? " " : tag;
      i++;
    }
    if (hunk.oldLines.length !== hunk.oldCount || hunk.newLines.length !== hunk.newCount) return undefined;
    while (i < lines.length && lines[i].startsWith("\\")) {
      markNoEol(hunk, last);
      i++;
    }
    hunks.push(hunk);
  }
  return hunks.length > 0 ? hunks : undefined;
}

function markNoEol(hunk: Hunk, lastTag: string): void {
  if (lastTag === "-" || lastTag === " ") hunk.oldNoEol = true;
  if (lastTag === "+" || lastTag === " ") hunk.newNoEol = true;
}

interface Text {
  lines: string[];
  eol: boolean;
}

function toText(text: string): Text {
  if (text === "") return { lines: [], eol: false };
  const lines = text.split("\n");
  const eol = lines[lines.length - 1] === "";
  if (eol) lines.pop();
  return { lines, eol };
}

function fromText(text: Text): string {
  return text.lines.length === 0 ? "" : text.lines.join("\n") + (text.eol ? "\n" : "");
}

/** Applies `hunks` from side `from` to side `to`; undefined if a hunk does not match. */
function transform(current: string, hunks: Hunk[], reverse: boolean): string | undefined {
  const source = toText(current);
  const out: string[] = [];
  let eol = source.eol;
  let cursor = 0; // next source line not yet copied
  for (const hunk of hunks) {
    const start = reverse ? hunk.newStart : hunk.oldStart;
    const count = reverse ? hunk.newCount : hunk.oldCount;
    const expect = reverse ? hunk.newLines : hunk.oldLines;
    const replace = reverse ? hunk.oldLines : hunk.newLines;
    const sourceNoEol = reverse ? hunk.newNoEol : hunk.oldNoEol;
    const targetNoEol = reverse ? hunk.oldNoEol : hunk.newNoEol;
    // A side with no lines names the line before it (0 at the top of the file).
    const pos = count === 0 ? start : start - 1;
    if (pos < cursor || pos + expect.length > source.lines.length) return undefined;
    for (let k = 0; k < expect.length; k++) if (source.lines[pos + k] !== expect[k]) return undefined;
    const atEnd = pos + expect.length === source.lines.length;
    if (atEnd && expect.length > 0 && sourceNoEol === source.eol) return undefined;
    out.push(...source.lines.slice(cursor, pos), ...replace);
    cursor = pos + expect.length;
    if (atEnd) eol = !targetNoEol;
  }
  out.push(...source.lines.slice(cursor));
  return fromText({ lines: out, eol });
}

/** The text before the change, from the text after it; undefined if the diff does not fit. */
export function reverseUnifiedDiff(current: string, diff: string): string | undefined {
  const hunks = parseHunks(diff);
  return hunks ? transform(current, hunks, true) : undefined;
}

/** The text after the change, from the text before it; undefined if the diff does not fit. */
export function applyUnifiedDiff(current: string, diff: string): string | undefined {
  const hunks = parseHunks(diff);
  return hunks ? transform(current, hunks, false) : undefined;
}

/** The server's closing line on an edit that lives only in an editor buffer (docs/protocol.md). */
const BUFFER_MARK = /\n?\(in the editor's buffer, not saved\)\s*$/;

/** A recorded diff without that closing line: a plain unified diff to apply or reverse. */
export function withoutBufferMark(diff: string): string {
  return diff.replace(BUFFER_MARK, "\n").replace(/\n\n$/, "\n");
}

/**
 * The text before a recorded change, from the text now. A buffer-only diff carries git's
 * "\ No newline at end of file" line like any other (the server adds it to difflib's output).
 */
export function reverseRecorded(current: string, recorded: string): string | undefined {
  return reverseUnifiedDiff(current, withoutBufferMark(recorded));
}

/** One hunk of a recorded diff: where it says it is, and what it changed (for the panel). */
export interface HunkSummary {
  index: number;
  /** The hunk's header line, e.g. `@@ -3,7 +3,7 @@`. */
  header: string;
  /** The first changed line, on the new side (1-based; after the hunk's leading context). */
  line: number;
  removed: number;
  added: number;
}

/** The hunks of a recorded diff, for a per-hunk Undo; [] when it has none (binary, cut). */
export function hunkSummaries(recorded: string): HunkSummary[] {
  const diff = withoutBufferMark(recorded);
  if (!parseHunks(diff)) return [];
  const out: HunkSummary[] = [];
  let newSide = 0; // the new side's lines of the current hunk so far
  let changed = false;
  for (const line of diff.split("\n")) {
    const header = HUNK_HEADER.exec(line);
    const last = out[out.length - 1];
    if (header) {
      out.push({ index: out.length, header: header[0], line: Number(header[3]), removed: 0, added: 0 });
      newSide = 0;
      changed = false;
      continue;
    }
    if (!last || line.startsWith("\\")) continue;
    const tag = line.charAt(0);
    if ((tag === "-" || tag === "+") && !changed) {
      changed = true;
      last.line += newSide;
    }
    if (tag === "-") last.removed++;
    else if (tag === "+") last.added++;
    newSide += tag === "-" ? 0 : 1;
  }
  return out;
}

/**
 * The text with one hunk of a recorded change put back (its old lines for its new ones),
 * every other line as it is now. The hunk's new lines (with their context) are looked for
 * where the diff says, else at the one place in the file they occur (lines above may have
 * moved since: another hunk undone, an edit of the user's); undefined when the file no
 * longer has them, or has them in more than one place: nothing is guessed.
 */
export function reverseHunk(current: string, recorded: string, index: number): string | undefined {
  const hunks = parseHunks(withoutBufferMark(recorded));
  const hunk = hunks?.[index];
  if (!hunk) return undefined;
  const at = (start: number): string | undefined => transform(current, [{ ...hunk, newStart: start }], true);
  const stated = at(hunk.newStart);
  if (stated !== undefined || hunk.newCount === 0) return stated;
  const lines = toText(current).lines;
  const found: number[] = [];
  for (let pos = 0; pos + hunk.newLines.length <= lines.length; pos++) {
    if (pos + 1 === hunk.newStart) continue;
    // A hunk that ends the file without a final newline can only be at the end.
    if (hunk.newNoEol && pos + hunk.newLines.length !== lines.length) continue;
    if (hunk.newLines.every((line, k) => lines[pos + k] === line)) found.push(pos);
    if (found.length > 1) return undefined;
  }
  return found.length === 1 ? at(found[0] + 1) : undefined;
}
