/** Unified diffs applied to a file's text, both ways (pure, unit tested). */

/** Applies a unified diff backwards (new -> old); undefined if a hunk does not match. */
export function reverseUnifiedDiff(current: string, diff: string): string | undefined {
  const lines = current.split("\n");
  const hunks = [...diff.matchAll(/^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@.*$/gm)];
  if (hunks.length === 0) return undefined;
  const body = diff.split("\n");
  let offset = 0;
  let out = lines.slice();
  let i = 0;
  while (i < body.length && !body[i].startsWith("@@")) i++;
  while (i < body.length) {
    const header = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(body[i]);
    if (!header) {
      i++;
      continue;
    }
    i++;
    const oldLines: string[] = [];
    const newLines: string[] = [];
    while (i < body.length && !body[i].startsWith("@@")) {
      const l = body[i];
      if (l.startsWith("+")) newLines.push(l.slice(1));
      else if (l.startsWith("-")) oldLines.push(l.slice(1));
      else if (l.startsWith(" ")) {
        oldLines.push(l.slice(1));
        newLines.push(l.slice(1));
      } else if (l === "" && i === body.length - 1) {
        /* trailing newline of the diff */
      } else if (!l.startsWith("\\")) {
        oldLines.push(l);
        newLines.push(l);
      }
      i++;
    }
    const start = Math.max(0, Number(header[2]) - 1 + offset);
    const actual = out.slice(start, start + newLines.length);
    if (actual.join("\n") !== newLines.join("\n")) return undefined;
    out = [...out.slice(0, start), ...oldLines, ...out.slice(start + newLines.length)];
    offset += oldLines.length - newLines.length;
  }
  return out.join("\n");
}

/** Applies a unified diff forwards (old -> new); undefined if a hunk does not match. */
export function applyUnifiedDiff(current: string, diff: string): string | undefined {
  const swapped = diff
    .split("\n")
    .map((l) => (l.startsWith("+++") || l.startsWith("---") ? l : l.startsWith("+") ? `-${l.slice(1)}` : l.startsWith("-") ? `+${l.slice(1)}` : l))
    .map((l) => l.replace(/^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@/, "@@ -$2 +$1 @@"))
    .join("\n");
  return reverseUnifiedDiff(current, swapped);
}
