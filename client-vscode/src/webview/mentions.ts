/**
 * The composer's `@` file completion (issue 31, item 15), as pure functions: the `@partial`
 * being typed at the cursor, the workspace files that match it (bounded), and the prompt
 * with the chosen path. No DOM, so node tests it.
 */

/** The `@partial` right before the cursor (not an e-mail address), with where it starts. */
export function mentionAt(text: string, cursor: number): { start: number; query: string } | undefined {
  const before = text.slice(0, cursor);
  const match = /(^|\s)@([^\s@"]*)$/.exec(before);
  if (!match) return undefined;
  return { start: before.length - match[2].length - 1, query: match[2] };
}

/** The prompt with the `@partial` at `start` replaced by `@path ` (quoted when it has blanks). */
export function completeMention(text: string, start: number, cursor: number, path: string): { text: string; cursor: number } {
  const mention = /\s/.test(path) ? `@"${path}" ` : `@${path} `;
  const next = `${text.slice(0, start)}${mention}${text.slice(cursor)}`;
  return { text: next, cursor: start + mention.length };
}

/** At most this many files are offered for one `@` (the host's findFiles is bounded too). */
export const MAX_FILE_COMPLETIONS = 20;

/**
 * The workspace files for `@query`: paths whose file name starts with it first, then paths
 * with it anywhere (case-insensitive), each group shortest first; at most `max`.
 */
export function rankFiles(paths: readonly string[], query: string, max = MAX_FILE_COMPLETIONS): string[] {
  const q = query.toLowerCase();
  const name = (p: string): string => p.slice(p.lastIndexOf("/") + 1).toLowerCase();
  const starts: string[] = [];
  const contains: string[] = [];
  for (const p of paths) {
    if (name(p).startsWith(q)) starts.push(p);
    else if (p.toLowerCase().includes(q)) contains.push(p);
  }
  const byLength = (a: string, b: string): number => a.length - b.length || a.localeCompare(b);
  return [...starts.sort(byLength), ...contains.sort(byLength)].slice(0, max);
}
