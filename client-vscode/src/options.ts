/**
 * The agent settings as the server receives them: `initializationOptions` and the answer
 * to `workspace/configuration` for section `tunacode`. Pure, so node tests it directly.
 */

export type Approval = "ask" | "auto" | "read-only";

export interface AgentSettings {
  model: string;
  baseUrl: string;
  approval: Approval;
  maxTurns: number;
  requestTimeout: number;
  sessionStore: string;
  /** The other server settings (PASS_THROUGH_KEYS), as the user set them; absent = not set. */
  extra: Record<string, unknown>;
}

/**
 * Every other setting of the server's settings model (server/tunacode_lsp/agent/config.py
 * `_FIELDS`), passed as set (the server validates them); package.json declares each one and a
 * test checks both lists against the server's.
 */
export const PASS_THROUGH_KEYS: readonly string[] = [
  "maxRetries",
  "checkpointMaxMegabytes",
  "streamReadTimeout",
  "toolConcurrency",
  "shellInheritSecrets",
  "historyTokenBudget",
  "contextWindow",
  "compactThreshold",
  "logFile",
  "logLevel",
  "imageInput",
  "textToolCalls",
  "mcpServers",
  "mcpToolTimeout",
  "mcpStartupTimeout",
  "shellSandbox",
  "shellNetwork",
  "permissions",
  "hooks",
  "toolTimeouts",
  "webFetchPrivateAddresses",
  "shellEnvPassthrough",
  "shellReadOnlyPaths",
  "openaiApi",
  "thinkingBudget",
  "reasoningEffort",
  "headers",
  "modelCost",
];

/** Raw values (as VS Code returns them, possibly of the wrong type) -> typed settings. */
export function parseAgentSettings(raw: Record<string, unknown>): AgentSettings {
  const str = (v: unknown): string => (typeof v === "string" ? v.trim() : "");
  const approval = raw.approval;
  const maxTurns = Number(raw.maxTurns);
  const timeout = Number(raw.requestTimeout);
  return {
    model: str(raw.model),
    baseUrl: str(raw.baseUrl),
    approval: approval === "auto" || approval === "read-only" ? approval : "ask",
    maxTurns: Number.isInteger(maxTurns) && maxTurns >= 1 ? maxTurns : 40,
    requestTimeout: Number.isFinite(timeout) && timeout >= 0 ? timeout : 600,
    sessionStore: str(raw.sessionStore),
    extra: Object.fromEntries(
      PASS_THROUGH_KEYS.filter((key) => raw[key] !== undefined && raw[key] !== null).map((key) => [key, raw[key]]),
    ),
  };
}

/** The server's options: the agent settings, empty strings left out (= not set). */
export function initializationOptions(agent: AgentSettings): Record<string, unknown> {
  const options: Record<string, unknown> = {
    approval: agent.approval,
    maxTurns: agent.maxTurns,
    requestTimeout: agent.requestTimeout,
  };
  if (agent.model) options.model = agent.model;
  if (agent.baseUrl) options.baseUrl = agent.baseUrl;
  if (agent.sessionStore) options.sessionStore = agent.sessionStore;
  Object.assign(options, agent.extra);
  return options;
}

/**
 * The answer to `workspace/configuration`: every server setting with an explicit value,
 * `null` for one the user has not set (or cleared), so a cleared `tunacode.model` is unset on
 * the server instead of bringing back the value it started with.
 */
export function configurationAnswer(agent: AgentSettings): Record<string, unknown> {
  const options: Record<string, unknown> = {
    model: agent.model || null,
    baseUrl: agent.baseUrl || null,
    sessionStore: agent.sessionStore || null,
    approval: agent.approval,
    maxTurns: agent.maxTurns,
    requestTimeout: agent.requestTimeout,
  };
  for (const key of PASS_THROUGH_KEYS) options[key] = key in agent.extra ? agent.extra[key] : null;
  return options;
}

/**
 * Settings that start processes, choose the model's endpoint, loosen approvals or move the
 * session store: package.json gives them `machine` or `application` scope and lists them
 * in `untrustedWorkspaces.restrictedConfigurations`, and they are read from the user's own
 * settings only (`userLevelValue`), so a checked-out `.vscode/settings.json` never sets them.
 * (Keys under `tunacode.`; the shell and MCP ones are listed ahead of their settings.)
 */
export const USER_ONLY_KEYS: readonly string[] = [
  "server.command",
  "server.python",
  "server.env",
  "baseUrl",
  "approval",
  "sessionStore",
  "shellSandbox",
  "shellNetwork",
  "shellEnvPassthrough",
  "shellInheritSecrets",
  "shellReadOnlyPaths",
  "webFetchPrivateAddresses",
  "headers",
  "hooks",
  "permissions",
  "mcpServers",
];

/** What `WorkspaceConfiguration.inspect` returns (the parts used here). */
export interface InspectedSetting<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/** The user's value (user, or remote machine, settings), else the default: never a workspace's. */
export function userLevelValue<T>(inspected: InspectedSetting<T> | undefined): T | undefined {
  if (inspected === undefined) return undefined;
  return inspected.globalValue !== undefined ? inspected.globalValue : inspected.defaultValue;
}

/**
 * A value the user set (never a default: package.json's defaults are not the server's
 * "not set"); for a user-only key, the user's own value only.
 */
export function setValue<T>(inspected: InspectedSetting<T> | undefined, userOnly: boolean): T | undefined {
  if (inspected === undefined) return undefined;
  if (userOnly) return inspected.globalValue;
  for (const value of [inspected.workspaceFolderValue, inspected.workspaceValue, inspected.globalValue]) {
    if (value !== undefined) return value;
  }
  return undefined;
}
