// The composer's model menu (src/modelPick.ts): real models only, the one in use marked,
// catalog facts shown, and a row that clears the user's setting instead of a fake "Server default".
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { modelFacts, modelRows } from "../../out/test/modelPick.mjs";

const result = {
  default: "openai:gpt-4.1",
  models: [
    { id: "openai:gpt-4.1", provider: "openai", configured: true, contextWindow: 1047576, cost: { input: 2, output: 8 }, input: ["text", "image"] },
    { id: "anthropic:claude-sonnet-4", provider: "anthropic", configured: false, contextWindow: 200000, cost: { input: 3, output: 15 } },
  ],
};

describe("modelRows", () => {
  it("has no 'Server default' row and puts the model in use first, marked", () => {
    const rows = modelRows(result, "anthropic:claude-sonnet-4", "");
    assert.ok(!rows.some((r) => /server default/i.test(r.label)));
    assert.equal(rows[0].value, "anthropic:claude-sonnet-4");
    assert.equal(rows[0].picked, true);
    assert.match(rows[0].description, /no key/);
    assert.equal(rows.length, 2);
  });

  it("shows the catalog's context window and price", () => {
    const rows = modelRows(result, undefined, "");
    assert.equal(rows[0].detail, "1M context · $2 in / $8 out per M tokens · images");
    assert.equal(modelFacts({ id: "x:y", provider: "x", configured: true }), "");
  });

  it("offers to clear the user's setting, naming what the server uses then", () => {
    const rows = modelRows(result, "openai:gpt-4.1", "openai:gpt-4.1");
    const last = rows.at(-1);
    assert.equal(last.value, "");
    assert.match(last.description, /openai:gpt-4\.1/);
  });

  it("keeps a session's model the server does not list", () => {
    const rows = modelRows(result, "openai-compatible:scripted", "");
    assert.equal(rows[0].value, "openai-compatible:scripted");
  });
});
