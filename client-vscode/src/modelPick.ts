/**
 * The composer's model menu as QuickPick rows: the server's models with their catalog facts
 * (context window, price), the one in use marked. Pure, so node tests it directly.
 */

import type { ModelInfo, ModelsListResult } from "./protocol";

export interface ModelRow {
  label: string;
  description?: string;
  detail?: string;
  picked?: boolean;
  /** The model to use; "" = clear the `tunacode.model` setting (the server then chooses). */
  value: string;
}

/** "128k" / "1M" tokens. */
export function formatWindow(tokens: number): string {
  if (tokens >= 1_000_000) return `${+(tokens / 1_000_000).toFixed(1)}M`;
  if (tokens >= 1_000) return `${Math.round(tokens / 1_000)}k`;
  return String(tokens);
}

function formatPrice(usd: number): string {
  return `$${+usd.toFixed(2)}`;
}

/** "128k context · $2/$8 per M tokens" from the catalog, "" when it knows nothing. */
export function modelFacts(model: ModelInfo): string {
  const facts: string[] = [];
  if (typeof model.contextWindow === "number" && model.contextWindow > 0) facts.push(`${formatWindow(model.contextWindow)} context`);
  const cost = model.cost;
  if (cost && typeof cost.input === "number" && typeof cost.output === "number") {
    facts.push(`${formatPrice(cost.input)} in / ${formatPrice(cost.output)} out per M tokens`);
  }
  if (model.input?.includes("image")) facts.push("images");
  return facts.join(" · ");
}

/**
 * Rows for the picker: the models (the one in use first and marked), then, when the user's
 * setting chooses a model, a row that clears it and says what the server would use instead.
 * `inUse` is the session's real model; `setting` the user's `tunacode.model`.
 */
export function modelRows(result: Partial<ModelsListResult>, inUse: string | undefined, setting: string): ModelRow[] {
  const models = Array.isArray(result.models) ? result.models.filter((m) => m && typeof m.id === "string") : [];
  const rows: ModelRow[] = models.map((m) => ({
    label: m.id === inUse ? `$(check) ${m.id}` : m.id,
    description: [m.provider, m.configured === false ? "no key" : undefined].filter(Boolean).join(" · "),
    detail: modelFacts(m) || undefined,
    picked: m.id === inUse,
    value: m.id,
  }));
  if (inUse && !models.some((m) => m.id === inUse)) {
    rows.unshift({ label: `$(check) ${inUse}`, description: "in use", picked: true, value: inUse });
  }
  rows.sort((a, b) => Number(!!b.picked) - Number(!!a.picked));
  if (setting) {
    rows.push({
      label: "Clear the tunacode.model setting",
      description: result.default ? `the server then uses ${result.default}` : undefined,
      value: "",
    });
  }
  return rows;
}
