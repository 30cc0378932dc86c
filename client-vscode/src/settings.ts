/**
 * The extension's settings, typed and read in one place. Agent settings go to the server as
 * `initializationOptions` and through `workspace/configuration` (live); a change to how the
 * server starts restarts it.
 */

import * as vscode from "vscode";
import { type AgentSettings, parseAgentSettings } from "./options";

export { initializationOptions } from "./options";

export const SECTION = "tunacode";

export interface ServerSettings {
  command: string[];
  python: string;
  env: Record<string, string>;
}

export interface Settings {
  server: ServerSettings;
  agent: AgentSettings;
}

/**
 * Settings whose change needs a new server process: how it starts. The agent settings
 * apply live (the server re-reads section `tunacode` on workspace/didChangeConfiguration).
 */
export const RESTART_KEYS = ["server.command", "server.python", "server.env"] as const;

export function readSettings(): Settings {
  const c = vscode.workspace.getConfiguration(SECTION);
  const command = c.get<unknown>("server.command", []);
  const env = c.get<unknown>("server.env", {});
  const python = c.get<unknown>("server.python", "python3");
  return {
    server: {
      command: Array.isArray(command) ? command.filter((x): x is string => typeof x === "string") : [],
      python: typeof python === "string" && python.trim() ? python.trim() : "python3",
      env:
        env && typeof env === "object"
          ? (Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === "string")) as Record<string, string>)
          : {},
    },
    agent: parseAgentSettings({
      model: c.get("model"),
      baseUrl: c.get("baseUrl"),
      approval: c.get("approval"),
      maxTurns: c.get("maxTurns"),
      requestTimeout: c.get("requestTimeout"),
      sessionStore: c.get("sessionStore"),
    }),
  };
}

export function needsRestart(event: vscode.ConfigurationChangeEvent): boolean {
  return RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
}
