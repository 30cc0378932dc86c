// Unit tests of how the extension finds the server program (src/serverCommand.ts).
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { resolveServerCommand, systemProbes } from "../../out/test/serverCommand.mjs";

function fakeProbes({ onPath = {}, importable = [] } = {}) {
  return {
    which: (program) => onPath[program],
    canImport: (python) => (importable.includes(python) ? { ok: true } : { ok: false, detail: "No module named 'tunacode_lsp'" }),
  };
}

describe("resolveServerCommand", () => {
  it("uses tunacode.server.command when set", () => {
    const r = resolveServerCommand(
      { command: ["my-lsp", "--stdio"], python: "python3" },
      fakeProbes({ onPath: { "my-lsp": "/opt/bin/my-lsp", "tunacode-lsp": "/usr/bin/tunacode-lsp" } }),
    );
    assert.deepEqual(r, { ok: true, command: "/opt/bin/my-lsp", args: ["--stdio"], source: "setting" });
  });

  it("says so when the configured command does not exist, rather than guessing", () => {
    const r = resolveServerCommand(
      { command: ["missing-lsp"], python: "python3" },
      fakeProbes({ onPath: { "tunacode-lsp": "/usr/bin/tunacode-lsp" } }),
    );
    assert.equal(r.ok, false);
    assert.match(r.message, /tunacode\.server\.command/);
    assert.match(r.message, /missing-lsp/);
  });

  it("prefers tunacode-lsp on PATH", () => {
    const r = resolveServerCommand({ command: [], python: "python3" }, fakeProbes({ onPath: { "tunacode-lsp": "/v/bin/tunacode-lsp", python3: "/usr/bin/python3" }, importable: ["/usr/bin/python3"] }));
    assert.deepEqual(r, { ok: true, command: "/v/bin/tunacode-lsp", args: [], source: "path" });
  });

  it("falls back to the configured Python with -m tunacode_lsp", () => {
    const r = resolveServerCommand({ command: [], python: "/v/bin/python" }, fakeProbes({ onPath: { "/v/bin/python": "/v/bin/python" }, importable: ["/v/bin/python"] }));
    assert.deepEqual(r, { ok: true, command: "/v/bin/python", args: ["-P", "-m", "tunacode_lsp"], source: "python" });
  });

  it("explains what to install or set when nothing works", () => {
    const noModule = resolveServerCommand({ command: [], python: "python3" }, fakeProbes({ onPath: { python3: "/usr/bin/python3" } }));
    assert.equal(noModule.ok, false);
    assert.match(noModule.message, /pip install tunacode-lsp/);
    assert.match(noModule.message, /tunacode\.server\.python/);
    assert.match(noModule.message, /No module named/);
    const noPython = resolveServerCommand({ command: [], python: "nopython" }, fakeProbes());
    assert.equal(noPython.ok, false);
    assert.match(noPython.message, /`nopython` does not exist/);
  });
});

describe("systemProbes", () => {
  it("finds executables on the given PATH only", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tunacode-probe-"));
    try {
      const exe = path.join(dir, "tunacode-lsp");
      fs.writeFileSync(exe, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
      fs.writeFileSync(path.join(dir, "not-exec"), "x", { mode: 0o644 });
      const probes = systemProbes({ PATH: dir });
      assert.equal(probes.which("tunacode-lsp"), exe);
      assert.equal(probes.which("not-exec"), undefined);
      assert.equal(probes.which("absent"), undefined);
      assert.equal(probes.which(exe), exe);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reports why a Python cannot import the server", () => {
    const probes = systemProbes({ PATH: process.env.PATH, PYTHONPATH: "" });
    const python = probes.which("python3");
    if (!python) return; // no Python on this machine: nothing to probe
    const r = probes.canImport(python);
    if (!r.ok) assert.match(r.detail, /tunacode_lsp|No module/);
    const missing = probes.canImport("/nonexistent/python");
    assert.equal(missing.ok, false);
    assert.match(missing.detail, /ENOENT/);
  });
});
