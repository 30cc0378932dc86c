// Undo of one hunk of an agent's change (the Changes view): against real git diffs, each hunk
// reversed alone puts back its old lines and leaves the others' new lines; hunks undone one
// by one, in any order, give the text before the change exactly; a file that no longer has a
// hunk's new lines (or has them twice) is refused (undefined), never guessed.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { hunkSummaries, reverseHunk } from "../../out/test/diff.mjs";

const hasGit = spawnSync("git", ["--version"]).status === 0;

function gitDiff(dir, before, after) {
  const a = path.join(dir, "a");
  const b = path.join(dir, "b");
  fs.writeFileSync(a, before);
  fs.writeFileSync(b, after);
  const out = spawnSync("git", ["-c", "core.autocrlf=false", "diff", "--no-index", "--no-color", "-U3", "--", a, b], { encoding: "utf8" });
  return out.stdout
    .split("\n")
    .filter((l) => !/^(diff --git |index )/.test(l))
    .join("\n")
    .replace(/\n+$/, "");
}

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const lines = (n, tag = "line") => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}`);
const BEFORE = `${lines(30).join("\n")}\n`;
// Hunk 0 replaces line 3 by two lines; hunk 1 deletes lines 20-21 and changes 22.
const AFTER = `${[...lines(2), "three", "three and a half", ...lines(30).slice(3, 19), "twenty-two", ...lines(30).slice(22)].join("\n")}\n`;

describe("reverseHunk", { skip: !hasGit && "git is not installed" }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tunacode-hunks-"));
  const diff = gitDiff(dir, BEFORE, AFTER);

  it("lists each hunk with its lines removed and added", () => {
    assert.deepEqual(
      hunkSummaries(diff).map((h) => [h.index, h.removed, h.added]),
      [[0, 1, 2], [1, 3, 1]],
    );
    assert.match(hunkSummaries(diff)[0].header, /^@@ -\d+,\d+ \+\d+,\d+ @@$/);
    assert.deepEqual(hunkSummaries(diff).map((h) => h.line), [3, 21]);
    assert.deepEqual(hunkSummaries("Binary files a and b differ"), []);
  });

  it("puts back one hunk's old lines and keeps the other hunk's new ones", () => {
    const first = reverseHunk(AFTER, diff, 0);
    assert.ok(first.includes("line 3\nline 4\n") && !first.includes("three"));
    assert.ok(first.includes("twenty-two") && !first.includes("line 20\n"));
    const second = reverseHunk(AFTER, diff, 1);
    assert.ok(second.includes("three and a half") && second.includes("line 20\nline 21\nline 22\n"));
    assert.ok(!second.includes("twenty-two"));
  });

  it("undoes the hunks one by one, in either order, to the exact text before", () => {
    assert.equal(reverseHunk(reverseHunk(AFTER, diff, 0), diff, 1), BEFORE);
    assert.equal(reverseHunk(reverseHunk(AFTER, diff, 1), diff, 0), BEFORE);
  });

  it("finds a hunk that moved (lines added above it since) and refuses one no longer there", () => {
    const moved = `new top\nnew top 2\n${AFTER}`;
    assert.equal(reverseHunk(moved, diff, 1), `new top\nnew top 2\n${reverseHunk(AFTER, diff, 1)}`);
    const edited = AFTER.replace("twenty-two", "twenty-two, edited by hand");
    assert.equal(reverseHunk(edited, diff, 1), undefined);
    assert.equal(reverseHunk(AFTER, diff, 2), undefined);
    assert.equal(reverseHunk("", diff, 0), undefined);
  });

  it("refuses a hunk whose lines the file now has in two places", () => {
    const block = AFTER.split("\n").slice(0, 7).join("\n");
    // A line added above: not where the diff says, and then in two places.
    const twice = `added on top\n${AFTER}${block}\n`;
    assert.equal(reverseHunk(twice, diff, 0), undefined);
  });

  it("a final line without a newline: each hunk alone and both, exactly", () => {
    const before = `${lines(12).join("\n")}`;
    const after = `${["one", ...lines(12).slice(1, 11), "twelve"].join("\n")}`;
    const d = gitDiff(dir, before, after);
    assert.equal(hunkSummaries(d).length, 2);
    assert.equal(reverseHunk(after, d, 1), `${["one", ...lines(12).slice(1)].join("\n")}`);
    assert.equal(reverseHunk(reverseHunk(after, d, 1), d, 0), before);
    assert.equal(reverseHunk(reverseHunk(after, d, 0), d, 1), before);
  });

  it("random edits of unique lines: every order of hunk undos gives the text before", () => {
    const rand = rng(31);
    for (let round = 0; round < 40; round++) {
      const base = lines(10 + Math.floor(rand() * 40), `r${round}`);
      const changed = [];
      for (const line of base) {
        const r = rand();
        if (r < 0.08) continue; // deleted
        if (r < 0.16) changed.push(`${line} changed`);
        else changed.push(line);
        if (rand() < 0.06) changed.push(`${line} added`);
      }
      const eol = rand() < 0.7;
      const before = base.join("\n") + (eol ? "\n" : "");
      const after = changed.join("\n") + (rand() < 0.7 ? "\n" : "");
      if (before === after || after === "" || after === "\n") continue;
      const d = gitDiff(dir, before, after);
      const n = hunkSummaries(d).length;
      assert.ok(n > 0, d);
      const order = [...Array(n).keys()].sort(() => rand() - 0.5);
      let text = after;
      for (const i of order) {
        const next = reverseHunk(text, d, i);
        assert.notEqual(next, undefined, `round ${round}: hunk ${i} of ${JSON.stringify(order)}\n${d}\n--- text:\n${text}`);
        text = next;
      }
      assert.equal(text, before, `round ${round}, order ${JSON.stringify(order)}\n${d}`);
    }
  });
});
