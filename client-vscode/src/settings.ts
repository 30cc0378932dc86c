/**
 * The extension's settings, typed and read in one place. Agent settings go to the server as
 * `initializationOptions` (and through `workspace/configuration`); a change to any of them,
 * or to how the server starts, restarts the server.
 */

import * as vscode from "vscode";

export const SECTION = "tunacode";

export interface ServerSettings {
  command: string[];
  python: string;
  env: Record<string, string>;
}

export type Approval = "ask" | "auto" | "read-only";

export interface AgentSettings {
  model: string;
  baseUrl: string;
  approval: Approval;
  maxTurns: number;
  requestTimeout: number;
  sessionStore: string;
}

export interface Settings {
  server: ServerSettings;
  agent: AgentSettings;
}

/** Settings whose change needs a new server process. */
export const RESTART_KEYS = [
  "server.command",
  "server.python",
  "server.env",
  "model",
  "baseUrl",
  "approval",
  "maxTurns",
  "requestTimeout",
  "sessionStore",
] as const;

export function readSettings(): Settings {
  const c = vscode.workspace.getConfiguration(SECTION);
  const approval = c.get<string>("approval", "ask");
  const env = c.get<Record<string, unknown>>("server.env", {}) ?? {};
  return {
    server: {
      command: (c.get<unknown[]>("server.command", []) ?? []).filter((x): x is string => typeof x === "string"),
      python: c.get<string>("server.python", "python3") || "python3",
      env: Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === "string")) as Record<string, string>,
    },
    agent: {
      model: (c.get<string>("model", "") ?? "").trim(),
      baseUrl: (c.get<string>("baseUrl", "") ?? "").trim(),
      approval: approval === "auto" || approval === "read-only" ? approval : "ask",
      maxTurns: positiveInt(c.get<number>("maxTurns", 40), 40),
      requestTimeout: Math.max(0, Number(c.get<number>("requestTimeout", 600)) || 0),
      sessionStore: (c.get<string>("sessionStore", "") ?? "").trim(),
    },
  };
}

/** The server's `initializationOptions`: the agent settings, empty strings left out. */
export function initializationOptions(agent: AgentSettings): Record<string, unknown> {
  const options: Record<string, unknown> = {
    approval: agent.approval,
    maxTurns: agent.maxTurns,
    requestTimeout: agent.requestTimeout,
  };
  if (agent.model) options.model = agent.model;
  if (agent.baseUrl) options.baseUrl = agent.baseUrl;
  if (agent.sessionStore) options.sessionStore = agent.sessionStore;
  return options;
}

export function needsRestart(event: vscode.ConfigurationChangeEvent): boolean {
  return RESTART_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
}

function positiveInt(value: unknown, fallback: number): number {
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 ? n : fallback;
}
