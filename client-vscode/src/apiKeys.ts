/**
 * First run without a key: which environment variable holds a provider's key (the server
 * reads the key from its environment), and whether the model in use lacks one. Keys typed in
 * the panel are kept in VS Code's SecretStorage and passed to the server's environment only.
 * Pure, so node tests it directly.
 */

import type { ModelInfo } from "./protocol";

/** The key variable of each provider (server/tunacode_lsp/agent/models.py PROVIDERS). */
export const KEY_VARIABLES: Readonly<Record<string, string>> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  gemini: "GEMINI_API_KEY",
  openrouter: "OPENROUTER_API_KEY",
  azure: "AZURE_OPENAI_API_KEY",
  "openai-compatible": "OPENAI_COMPATIBLE_API_KEY",
};

/** The SecretStorage key of a variable. */
export const secretName = (variable: string): string => `tunacode.env.${variable}`;

export function keyVariable(model: string): string | undefined {
  const provider = model.split(":", 1)[0] ?? "";
  return KEY_VARIABLES[provider];
}

/** The model in use when the server says it has no key for it (`configured: false`), else undefined. */
export function missingKey(models: ModelInfo[] | undefined, inUse: string | undefined): { model: string; variable: string } | undefined {
  if (!inUse || !Array.isArray(models)) return undefined;
  const info = models.find((m) => m && m.id === inUse);
  if (!info || info.configured !== false) return undefined;
  const variable = keyVariable(inUse);
  return variable ? { model: inUse, variable } : undefined;
}

/** The server's environment: the process's, the stored keys where the process has none, then tunacode.server.env. */
export function serverEnv(
  processEnv: Record<string, string | undefined>,
  stored: Record<string, string>,
  configured: Record<string, string>,
): Record<string, string | undefined> {
  const keys = Object.fromEntries(Object.entries(stored).filter(([name, value]) => value && !processEnv[name]));
  return { ...processEnv, ...keys, ...configured };
}
