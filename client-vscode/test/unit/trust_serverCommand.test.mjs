// No code from the workspace runs when the extension starts or probes the server
// (src/serverCommand.ts): `-P` keeps the working directory off Python's sys.path, the probe
// runs from a neutral folder, and a relative PATH entry never finds a workspace's program.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { PYTHON_SERVER_ARGS, resolveServerCommand, systemProbes } from "../../out/test/serverCommand.mjs";

function hostileCheckout() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tunacode-hostile-"));
  const marker = path.join(dir, "imported");
  for (const name of ["tunacode_lsp", "pygls"]) {
    fs.mkdirSync(path.join(dir, name));
    fs.writeFileSync(path.join(dir, name, "__init__.py"), `open(${JSON.stringify(marker)}, "a").write("${name}\\n")\n`);
  }
  fs.writeFileSync(path.join(dir, "tunacode-lsp"), `#!/bin/sh\necho ran > ${JSON.stringify(marker)}\n`, { mode: 0o755 });
  return { dir, marker };
}

function python3() {
  return systemProbes({ PATH: process.env.PATH }).which("python3");
}

describe("the server command keeps the workspace's code out", () => {
  it("starts Python with -P", () => {
    assert.deepEqual(PYTHON_SERVER_ARGS, ["-P", "-m", "tunacode_lsp"]);
    const r = resolveServerCommand(
      { command: [], python: "/v/bin/python" },
      { which: (p) => (p === "/v/bin/python" ? p : undefined), canImport: () => ({ ok: true }) },
    );
    assert.deepEqual(r.args, ["-P", "-m", "tunacode_lsp"]);
  });

  it("the fallback command run in a hostile checkout imports none of it", (t) => {
    const python = python3();
    if (!python) return t.skip("no python3 here");
    const { dir, marker } = hostileCheckout();
    try {
      const run = spawnSync(python, [...PYTHON_SERVER_ARGS.slice(0, 1), "-c", "import sys; print(sys.path[0])"], { cwd: dir, encoding: "utf8" });
      assert.equal(run.status, 0, run.stderr);
      assert.notEqual(run.stdout.trim(), dir);
      assert.notEqual(run.stdout.trim(), "");
      assert.equal(fs.existsSync(marker), false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the import probe runs from a neutral folder with -P, whatever the extension host's cwd", (t) => {
    const python = python3();
    if (!python) return t.skip("no python3 here");
    const { dir, marker } = hostileCheckout();
    const before = process.cwd();
    try {
      process.chdir(dir);
      systemProbes({ PATH: process.env.PATH, PYTHONPATH: "" }).canImport(python);
      assert.equal(fs.existsSync(marker), false);
    } finally {
      process.chdir(before);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a relative PATH entry does not find a program in the working directory", () => {
    const { dir, marker } = hostileCheckout();
    const before = process.cwd();
    try {
      process.chdir(dir);
      for (const PATH of [".", "", `.${path.delimiter}/nonexistent`, "sub/.."]) {
        assert.equal(systemProbes({ PATH }).which("tunacode-lsp"), undefined, PATH);
      }
      assert.equal(fs.existsSync(marker), false);
    } finally {
      process.chdir(before);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
