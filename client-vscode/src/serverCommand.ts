/**
 * Which program starts the language server: `tunacode.server.command` if set, else
 * `tunacode-lsp` on PATH, else `<tunacode.server.python> -P -m tunacode_lsp` when that Python
 * can import it. Pure apart from the probes, so it is tested without VS Code.
 *
 * `-P` (Python 3.11+, which the server requires) keeps the working directory (the workspace)
 * off `sys.path`: a checkout holding `tunacode_lsp/`, `pygls/` or `orjson.py` is never
 * imported, neither by the probe nor by the server. Not `-I`: that would also drop
 * PYTHONPATH and the user's site-packages, where the server may be installed.
 */

import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** The arguments after the Python program that start the server. */
export const PYTHON_SERVER_ARGS = ["-P", "-m", "tunacode_lsp"];

export interface ServerCommandSettings {
  command: string[];
  python: string;
}

export interface Probes {
  /** Absolute path of an executable found on PATH (or the path itself if it is one). */
  which(program: string): string | undefined;
  /** Whether `python -c "import tunacode_lsp"` succeeds; `detail` says why not. */
  canImport(python: string): { ok: boolean; detail?: string };
}

export type Resolution =
  | { ok: true; command: string; args: string[]; source: "setting" | "path" | "python" }
  | { ok: false; message: string; tried: string[] };

export const INSTALL_HINT =
  "Install the server into a Python environment (`pip install tunacode-lsp`, or `pip install -e .` in a checkout) " +
  "so `tunacode-lsp` is on PATH, or set `tunacode.server.python` to that environment's Python, " +
  "or `tunacode.server.command` to the full command.";

export function resolveServerCommand(settings: ServerCommandSettings, probes: Probes): Resolution {
  const tried: string[] = [];
  const configured = settings.command.filter((part) => typeof part === "string" && part.length > 0);
  if (configured.length > 0) {
    const [program, ...args] = configured;
    const found = probes.which(program);
    if (found) return { ok: true, command: found, args, source: "setting" };
    return {
      ok: false,
      tried: [configured.join(" ")],
      message: `TunaCode: the server command from \`tunacode.server.command\` was not found: \`${program}\`. Fix the setting or clear it to use \`tunacode-lsp\` from PATH.`,
    };
  }

  const onPath = probes.which("tunacode-lsp");
  tried.push("tunacode-lsp on PATH");
  if (onPath) return { ok: true, command: onPath, args: [], source: "path" };

  const python = settings.python || "python3";
  tried.push(`${python} ${PYTHON_SERVER_ARGS.join(" ")}`);
  const pythonPath = probes.which(python);
  if (pythonPath) {
    const probe = probes.canImport(pythonPath);
    if (probe.ok) return { ok: true, command: pythonPath, args: [...PYTHON_SERVER_ARGS], source: "python" };
    return {
      ok: false,
      tried,
      message: `TunaCode: the language server was not found: \`tunacode-lsp\` is not on PATH and \`${python}\` cannot import \`tunacode_lsp\`${probe.detail ? ` (${probe.detail})` : ""}. ${INSTALL_HINT}`,
    };
  }
  return {
    ok: false,
    tried,
    message: `TunaCode: the language server was not found: \`tunacode-lsp\` is not on PATH and the Python \`${python}\` does not exist. ${INSTALL_HINT}`,
  };
}

/** Probes against the real file system and PATH of the given environment. */
export function systemProbes(env: NodeJS.ProcessEnv = process.env): Probes {
  return {
    which(program: string): string | undefined {
      if (program.includes(path.sep) || path.isAbsolute(program)) {
        return isExecutable(program) ? path.resolve(program) : undefined;
      }
      for (const dir of (env.PATH ?? "").split(path.delimiter)) {
        if (!path.isAbsolute(dir)) continue; // "" or "." would mean the working directory: the workspace
        const candidate = path.join(dir, program);
        if (isExecutable(candidate)) return candidate;
      }
      return undefined;
    },
    canImport(python: string) {
      const run = spawnSync(python, ["-P", "-c", "import tunacode_lsp"], { env, cwd: os.tmpdir(), timeout: 15_000, encoding: "utf8" });
      if (run.error) return { ok: false, detail: run.error.message };
      if (run.status === 0) return { ok: true };
      const lastLine = (run.stderr ?? "").trim().split("\n").pop() ?? "";
      return { ok: false, detail: lastLine || `exit code ${run.status}` };
    },
  };
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** One sentence for a failed start, from what the process said (pure, unit tested). */
export function explainFailure(input: {
  spawnError?: { message: string; code?: string };
  stderr: string[];
  fallback: string;
  commandLine: string;
}): string {
  const err = input.spawnError as (Error & { code?: string }) | undefined;
  if (err?.code === "ENOENT") return `${input.commandLine.split(" ")[0]}: program not found (tunacode.server.command / tunacode.server.python)`;
  if (err?.code === "EACCES") return `${input.commandLine.split(" ")[0]}: permission denied`;
  if (err) return err.message;
  const lines = input.stderr.map((l) => l.trim()).filter(Boolean);
  const telling = [...lines]
    .reverse()
    .find((l) => /(Error|Exception|No module named|not found|cannot|can't|denied|Traceback)/i.test(l) && !/^Traceback/.test(l));
  if (telling) return telling;
  if (lines.length > 0) return lines[lines.length - 1];
  return `${input.fallback} (${input.commandLine} printed nothing; it may not be a language server)`;
}
