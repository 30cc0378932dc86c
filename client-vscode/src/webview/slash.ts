/**
 * `/` completion in the composer: the prompt commands of the workspace and the user
 * (`tunacode.commands.list`). Pure, so node tests it directly.
 */

export interface SlashCommand {
  name: string;
  description: string;
  argumentHint: string;
  source: string;
}

const MAX_SHOWN = 20;

/** The commands to offer while the prompt is `/` and part of a name (no blank yet). */
export function slashCompletions(text: string, commands: readonly SlashCommand[]): SlashCommand[] {
  const match = /^\/([A-Za-z0-9_.:-]*)$/.exec(text);
  if (!match) return [];
  const typed = match[1].toLowerCase();
  const starts = commands.filter((c) => c.name.toLowerCase().startsWith(typed));
  const contains = commands.filter((c) => !c.name.toLowerCase().startsWith(typed) && c.name.toLowerCase().includes(typed));
  return [...starts, ...contains].slice(0, MAX_SHOWN);
}

/** The prompt after choosing `command`: its name and a blank, ready for its arguments. */
export function completeSlash(command: SlashCommand): string {
  return `/${command.name} `;
}

/** One line for the list: `/name <hint> — description (source)`. */
export function slashLabel(command: SlashCommand): string {
  const hint = command.argumentHint ? ` ${command.argumentHint}` : "";
  const about = command.description ? ` — ${command.description}` : "";
  return `/${command.name}${hint}${about} (${command.source})`;
}

/** Commands as the server sent them, with anything malformed left out. */
export function parseCommands(raw: unknown): SlashCommand[] {
  const list = (raw as { commands?: unknown } | null)?.commands;
  if (!Array.isArray(list)) return [];
  const str = (v: unknown): string => (typeof v === "string" ? v : "");
  return list
    .filter((c): c is Record<string, unknown> => typeof c === "object" && c !== null && typeof (c as { name?: unknown }).name === "string")
    .map((c) => ({ name: str(c.name), description: str(c.description), argumentHint: str(c.argumentHint), source: str(c.source) }));
}
