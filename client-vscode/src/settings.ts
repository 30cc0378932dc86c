/**
 * The extension's settings, typed and read in one place. Agent settings go to the server as
 * `initializationOptions` and through `workspace/configuration` (live); a change to how the
 * server starts restarts it.
 */

import * as vscode from "vscode";
import { type AgentSettings, PASS_THROUGH_KEYS, USER_ONLY_KEYS, parseAgentSettings, setValue, userLevelValue } from "./options";

export { configurationAnswer, initializationOptions } from "./options";

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

/**
 * One setting: a key of USER_ONLY_KEYS from the user's own settings only (a workspace's value
 * is ignored, whatever VS Code's scope handling does), any other as VS Code merges it.
 */
export function settingValue(c: vscode.WorkspaceConfiguration, key: string, fallback?: unknown): unknown {
  if (USER_ONLY_KEYS.includes(key)) {
    const value = userLevelValue<unknown>(c.inspect<unknown>(key));
    return value === undefined ? fallback : value;
  }
  return c.get<unknown>(key, fallback);
}

export function readSettings(): Settings {
  const c = vscode.workspace.getConfiguration(SECTION);
  const get = (key: string, fallback?: unknown) => settingValue(c, key, fallback);
  const command = get("server.command", []);
  const env = get("server.env", {});
  const python = get("server.python", "python3");
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
      model: get("model"),
      baseUrl: get("baseUrl"),
      approval: get("approval"),
      maxTurns: get("maxTurns"),
      requestTimeout: get("requestTimeout"),
      sessionStore: get("sessionStore"),
      ...Object.fromEntries(PASS_THROUGH_KEYS.map((key) => [key, setValue(c.inspect<unknown>(key), USER_ONLY_KEYS.includes(key))])),
    }),
  };
}

export function needsRestart(event: vscode.ConfigurationChangeEvent): boolean {
  return RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
}
