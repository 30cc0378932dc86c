// First run without a key (src/apiKeys.ts): the model in use without a key is named with its
// variable; a stored key reaches the server's environment without overriding an explicit one.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { keyVariable, missingKey, serverEnv } from "../../out/test/apiKeys.mjs";

describe("missingKey", () => {
  const models = [
    { id: "openai:gpt-4.1", provider: "openai", configured: false },
    { id: "anthropic:claude-sonnet-4-6", provider: "anthropic", configured: true },
  ];
  it("names the model in use and its provider's key variable when the server has no key", () => {
    assert.deepEqual(missingKey(models, "openai:gpt-4.1"), { model: "openai:gpt-4.1", variable: "OPENAI_API_KEY" });
  });
  it("says nothing for a configured or unlisted model", () => {
    assert.equal(missingKey(models, "anthropic:claude-sonnet-4-6"), undefined);
    assert.equal(missingKey(models, "openai-compatible:scripted"), undefined);
    assert.equal(keyVariable("nope:x"), undefined);
  });
});

describe("serverEnv", () => {
  it("adds a stored key only where the environment has none; tunacode.server.env wins", () => {
    const env = serverEnv({ PATH: "/bin", ANTHROPIC_API_KEY: "from-env" }, { OPENAI_API_KEY: "stored", ANTHROPIC_API_KEY: "stored-a" }, { GEMINI_API_KEY: "cfg" });
    assert.equal(env.OPENAI_API_KEY, "stored");
    assert.equal(env.ANTHROPIC_API_KEY, "from-env");
    assert.equal(env.GEMINI_API_KEY, "cfg");
  });
});
