// What a tool card shows a person (issue 31, items 11-12): the server's title, never a raw
// tool name; no text meant for the model; diffs without their header lines.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { diffForPerson, diffIn, humanToolName, isHiddenTool, looksLikeDiff, resultForPerson, toolRowText } from "../../out/test/toolView.mjs";

describe("a tool card's row", () => {
  it("is the server's title when there is one", () => {
    assert.equal(toolRowText({ name: "edit_file", title: "Edit calc.py (+1 -1)" }), "Edit calc.py (+1 -1)");
  });
  it("without a title: a verb from the kind or the name in words, never the raw name", () => {
    assert.equal(toolRowText({ name: "bash", toolKind: "execute", summary: "bash: npm test" }), "Run npm test");
    assert.equal(toolRowText({ name: "list_files" }), "List files");
    assert.equal(humanToolName("web_fetch"), "Web fetch");
  });
  it("todo_write has no card: the plan box shows the plan", () => {
    assert.equal(isHiddenTool("todo_write"), true);
    assert.equal(isHiddenTool("read_file"), false);
  });
});

describe("a tool result for a person", () => {
  it("drops read_file's line references", () => {
    assert.equal(resultForPerson("1:d808|def add(a, b):\n2:0a1f|    return a - b"), "def add(a, b):\n    return a - b");
  });
  it("drops the advice written for the model", () => {
    assert.equal(
      resultForPerson("the user declined: bash rm -rf x. Do not retry it unchanged; ask or try another way."),
      "the user declined: bash rm -rf x.",
    );
    assert.equal(resultForPerson("old_text was not found, then call the tool again."), "old_text was not found.");
  });
  it("leaves ordinary text alone", () => {
    assert.equal(resultForPerson("a.txt\nb.txt\n10:30 meeting"), "a.txt\nb.txt\n10:30 meeting");
  });
});

describe("a diff for a person", () => {
  const diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n@@ -9 +9 @@\n-x\n+y\n";
  it("has no ---/+++/@@ header lines, a gap between hunks", () => {
    const lines = diffForPerson(diff);
    assert.deepEqual(lines.map((l) => l.kind), ["ctx", "del", "add", "gap", "del", "add"]);
    assert.equal(lines.some((l) => /^(---|\+\+\+|@@)/.test(l.text)), false);
  });
  it("an edit's result shows only its diff, not the text written for the model", () => {
    const result = "Edited calc.py. The edit is in the editor's buffer until the user saves it. Diagnostics the editor reports now (call diagnostics again later):\ncalc.py: no problems reported\n" + diff + "Do not retry it unchanged.";
    assert.equal(diffIn(result), diff);
    assert.equal(diffIn("a.txt\nb.txt"), undefined);
  });
  it("an applied edit's result that is a diff is recognised (kept coloured)", () => {
    assert.equal(looksLikeDiff(diff), true);
    assert.equal(looksLikeDiff("a.txt\nb.txt"), false);
  });
});
