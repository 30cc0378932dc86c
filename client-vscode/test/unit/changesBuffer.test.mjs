// An agent edit of a buffer with unsaved changes (issue 31, item 5): the server's recorded diff
// ends with "(in the editor's buffer, not saved)" and, like git's, marks a last line without a
// newline ("\ No newline at end of file"); the Changes view finds the text before it (for the
// read-only diff and for Undo), instead of claiming the file changed since.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { reverseRecorded, withoutBufferMark } from "../../out/test/diff.mjs";

const RECORDED =
  "--- a/calc.py\n+++ b/calc.py\n@@ -1,4 +1,4 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n # mine\n\\ No newline at end of file\n(in the editor's buffer, not saved)";
const RECORDED_WITH_NEWLINE = RECORDED.replace("\\ No newline at end of file\n", "");

describe("a buffer-only change", () => {
  it("loses its closing mark before it is applied", () => {
    assert.equal(withoutBufferMark(RECORDED).endsWith(" # mine\n\\ No newline at end of file\n"), true);
    assert.equal(withoutBufferMark("@@ -1 +1 @@\n-a\n+b\n"), "@@ -1 +1 @@\n-a\n+b\n");
  });
  it("reverses onto a buffer whose last line has no newline", () => {
    const buffer = "def add(a, b):\n    return a + b\n\n# mine";
    assert.equal(reverseRecorded(buffer, RECORDED), "def add(a, b):\n    return a - b\n\n# mine");
  });
  it("reverses onto a buffer that ends with a newline", () => {
    assert.equal(reverseRecorded("def add(a, b):\n    return a + b\n\n# mine\n", RECORDED_WITH_NEWLINE), "def add(a, b):\n    return a - b\n\n# mine\n");
  });
  it("still refuses a buffer changed since", () => {
    assert.equal(reverseRecorded("something else entirely\n", RECORDED), undefined);
  });
});
