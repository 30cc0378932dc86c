// The footer's MCP line (issue 31, item 13): why a server is not working is visible in the
// panel itself, not only in the tooltip.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mcpServersFrom, mcpSummary } from "../../out/test/state.mjs";

describe("the MCP status line", () => {
  it("says why a server failed or was not allowed", () => {
    const servers = mcpServersFrom([
      { name: "demo", state: "ready", tools: 2 },
      { name: "broken", state: "failed", tools: 0, error: "[Errno 2] No such file or directory: '/tmp/x'" },
      { name: "repo", state: "not_allowed", tools: 0 },
    ]);
    const summary = mcpSummary(servers);
    assert.equal(summary.text, "MCP: 1 ready · 1 failed · 1 not allowed");
    assert.equal(summary.reason, "broken: [Errno 2] No such file or directory: '/tmp/x' · repo: not allowed");
  });
  it("has no reason line when every server works, and cuts a long reason", () => {
    assert.equal(mcpSummary(mcpServersFrom([{ name: "demo", state: "ready", tools: 1 }])).reason, "");
    const long = mcpSummary(mcpServersFrom([{ name: "b", state: "failed", tools: 0, error: "x".repeat(500) }])).reason;
    assert.ok(long.length <= 3 + 120 && long.endsWith("…"), long);
  });
});
