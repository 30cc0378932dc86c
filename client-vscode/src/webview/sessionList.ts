/**
 * The sessions list, as pure functions (issue 31, item 14): a session's age in words that
 * never wrap ("5 min ago") and the search box's filter. No DOM, so node tests it.
 */

import type { Session } from "../protocol";

/** "just now", "5 min ago", "3 h ago", "yesterday", "4 d ago", else the date (2026-01-31). */
export function relativeTime(iso: string | undefined, now: number = Date.now()): string {
  const at = iso ? Date.parse(iso) : NaN;
  if (!Number.isFinite(at)) return "";
  const seconds = Math.max(0, Math.round((now - at) / 1000));
  if (seconds < 60) return "just now";
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.floor(hours / 24);
  if (days === 1) return "yesterday";
  if (days < 30) return `${days} d ago`;
  return new Date(at).toISOString().slice(0, 10);
}

/** The sessions whose title (or model, or id) has every word of the query, in their order. */
export function filterSessions(sessions: readonly Session[], query: string): Session[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return sessions.slice();
  return sessions.filter((s) => {
    const text = `${s.title ?? ""} ${s.model ?? ""} ${s.sessionId}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
}
