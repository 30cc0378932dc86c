// End-to-end test of the extension in a real VS Code: code-server with the packaged .vsix,
// driven by Chromium through playwright-core, against the server from this checkout and
// the scripted model on loopback. Run with Node 24 (code-server needs it):
//
//   node24 test/e2e/run-e2e.mjs --python REPO/.venv/bin/python [--artifacts DIR] [--summary FILE]
//                                [--scenario main|changes|control|firstrun]
//
// `main` (scenario.mjs): ask, links, output, history, settings, approvals, reload, stop,
// resume, restart, broken server. `changes` (changes-scenario.mjs): an agent edit, the
// Changes list, a diff, Undo of one file, Rewind with a conflict; files checked by bytes.
// `control` (control-scenario.mjs): typing while the agent works (steer, queue, remove),
// Edit and resend, Changes of an unsaved buffer as read-only documents, errors by kind.
// `firstrun` (firstrun-scenario.mjs): a model with no key: the first-run view, Set API Key.
// The scenarios share kit.mjs: the page, steps, screenshots, the scripted model, the panel.
// Paths of the tools come from REPO/.tools/vscode-e2e.env (written by scripts/setup-e2e.sh).
// Writes a JSON summary, screenshots and logs into the artifacts folder; exits 0 only if
// every step passed and every process it started is gone.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort, groupAlive, startGroup, stopGroup, waitForHttp } from "./processes.mjs";
import { runChangesScenario, CHANGES_FILES } from "./changes-scenario.mjs";
import { runScenario } from "./scenario.mjs";
import { runControlScenario, CONTROL_FILES, CONTROL_PERMISSIONS } from "./control-scenario.mjs";
import { runFirstRunScenario, FIRST_RUN_MODEL } from "./firstrun-scenario.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLIENT = path.resolve(HERE, "../..");
const REPO = path.resolve(CLIENT, "..");
const EXTENSION_ID = "tunacode.tunacode-vscode";

const { values: opts } = parseArgs({
  options: {
    python: { type: "string", default: path.join(REPO, ".venv/bin/python") },
    artifacts: { type: "string", default: path.join(REPO, "test-artifacts/vscode") },
    summary: { type: "string" },
    "keep-temp": { type: "boolean", default: false },
    scenario: { type: "string", default: "main" },
  },
});
const artifacts = path.resolve(opts.artifacts);
const summaryFile = path.resolve(opts.summary ?? path.join(artifacts, "summary.json"));

function readToolsEnv() {
  const file = path.join(REPO, ".tools/vscode-e2e.env");
  if (!fs.existsSync(file)) throw new Error(`${file} is missing: run client-vscode/scripts/setup-e2e.sh first`);
  const env = Object.fromEntries(
    fs.readFileSync(file, "utf8").split("\n").filter((l) => l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
  for (const key of ["NODE24", "CODE_SERVER", "CHROMIUM", "VSIX"]) {
    if (!env[key] || !fs.existsSync(env[key])) throw new Error(`${key} (${env[key]}) from ${file} does not exist: run setup-e2e.sh`);
  }
  return env;
}

function log(message) {
  process.stdout.write(`[e2e ${new Date().toISOString().slice(11, 23)}] ${message}\n`);
}

async function main() {
  const started = Date.now();
  fs.rmSync(artifacts, { recursive: true, force: true });
  fs.mkdirSync(artifacts, { recursive: true });
  const summary = { ok: false, steps: [], screenshots: [], cleanup: {}, startedAt: new Date().toISOString() };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tunacode-e2e-"));
  const dirs = Object.fromEntries(
    ["workspace", "user-data", "extensions", "xdg-config", "xdg-data", "xdg-cache", "xdg-state", "tunacode-home", "browser", "home"].map((name) => {
      const dir = path.join(tmp, name);
      fs.mkdirSync(dir, { recursive: true });
      return [name, dir];
    }),
  );
  let model;
  let codeServer;
  let context;
  try {
    const tools = readToolsEnv();
    const python = path.resolve(opts.python);
    if (!fs.existsSync(python)) throw new Error(`Python ${python} does not exist`);
    const venvBin = path.dirname(python);
    const serverCommand = path.join(venvBin, "tunacode-lsp");
    if (!fs.existsSync(serverCommand)) throw new Error(`${serverCommand} does not exist: install the server (pip install -e .)`);
    const nodeBin = path.dirname(tools.NODE24);
    const baseEnv = {
      ...process.env,
      HOME: dirs.home,
      XDG_CONFIG_HOME: dirs["xdg-config"],
      XDG_DATA_HOME: dirs["xdg-data"],
      XDG_CACHE_HOME: dirs["xdg-cache"],
      XDG_STATE_HOME: dirs["xdg-state"],
      TUNACODE_HOME: dirs["tunacode-home"],
      PATH: [venvBin, nodeBin, process.env.PATH].join(path.delimiter),
    };
    for (const key of ["TUNACODE_MODEL", "TUNACODE_BASE_URL", "TUNACODE_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "VSCODE_IPC_HOOK_CLI",
      "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY", "OPENAI_COMPATIBLE_API_KEY"]) {
      delete baseEnv[key];
    }

    // The workspace the agent works in.
    fs.writeFileSync(path.join(dirs.workspace, "hello.txt"), "hello from the e2e workspace\n");
    if (opts.scenario === "changes") {
      for (const [name, bytes] of Object.entries(CHANGES_FILES)) fs.writeFileSync(path.join(dirs.workspace, name), bytes);
      // Two MCP servers for the footer's status line: the tests' demo server (ready) and a
      // command that does not exist (failed). A workspace server starts only with consent to
      // its exact definition (approval "auto" never implies it): recorded below in the run's
      // TUNACODE_HOME, as if the user had answered Allow (devtools/consent.py).
      const mcp = {
        mcpServers: {
          demo: { command: python, args: [path.join(REPO, "tests/mcp/demo_server.py")], env: { NOTES_DIR: tmp } },
          broken: { command: path.join(tmp, "no-such-mcp-server") },
        },
      };
      fs.writeFileSync(path.join(dirs.workspace, ".mcp.json"), JSON.stringify(mcp, null, 2));
      const consent = spawnSync(python, ["-P", "-m", "tunacode_lsp.devtools.consent", dirs.workspace], {
        env: baseEnv,
        cwd: tmp,
        encoding: "utf8",
      });
      if (consent.status !== 0) throw new Error(`recording MCP consent failed: ${consent.stderr}`);
    } else if (opts.scenario === "control") {
      for (const [name, bytes] of Object.entries(CONTROL_FILES)) fs.writeFileSync(path.join(dirs.workspace, name), bytes);
    } else if (opts.scenario !== "main" && opts.scenario !== "firstrun") {
      throw new Error(`unknown --scenario ${opts.scenario} (main, changes, control or firstrun)`);
    }

    // The scripted model (its own process group; its port picked by itself).
    const scriptFile = path.join(tmp, "empty-script.json");
    fs.writeFileSync(scriptFile, JSON.stringify({ turns: [] }));
    log("starting the scripted model");
    model = startGroup(python, ["-m", "tunacode_lsp.devtools.scripted_model", "--script", scriptFile, "--port", "0"], {
      env: baseEnv,
      cwd: tmp,
      logFile: path.join(artifacts, "scripted-model.log"),
    });
    const line = await model.waitForLine(/scripted model listening on (http:\/\/\S+)/, 20_000);
    const modelUrl = line.match(/(http:\/\/\S+)/)[1].replace(/\/$/, "");
    const modelRoot = modelUrl.replace(/\/v1$/, "");
    log(`scripted model at ${modelUrl}`);

    // VS Code's settings for this run.
    const settings = {
      "tunacode.model": "openai-compatible:scripted",
      "tunacode.baseUrl": `${modelUrl}/chat/completions`,
      "tunacode.approval": "auto",
      // code-server's extension host takes PATH from a login shell, which resets it: name
      // the server from this checkout's environment, and its home, explicitly.
      "tunacode.server.command": [serverCommand],
      "tunacode.server.env": { TUNACODE_HOME: dirs["tunacode-home"] },
      "tunacode.trace.server": "verbose",
      "workbench.startupEditor": "none",
      "workbench.tips.enabled": false,
      "workbench.enableExperiments": false,
      "workbench.secondarySideBar.defaultVisibility": "hidden",
      "chat.disableAIFeatures": true,
      "telemetry.telemetryLevel": "off",
      "security.workspace.trust.enabled": false,
      "extensions.autoUpdate": false,
      "extensions.autoCheckUpdates": false,
      "update.mode": "none",
      "window.restoreWindows": "none",
      // A buffer with unsaved changes must stay unsaved (the changes scenario edits one).
      ...(opts.scenario === "changes" || opts.scenario === "control" ? { "files.autoSave": "off" } : {}),
      ...(opts.scenario === "control" ? { "tunacode.permissions": CONTROL_PERMISSIONS } : {}),
    };
    if (opts.scenario === "firstrun") {
      // A real provider's model with no key anywhere (the endpoint setting is for openai-compatible: only).
      settings["tunacode.model"] = FIRST_RUN_MODEL;
      delete settings["tunacode.baseUrl"];
    }
    fs.mkdirSync(path.join(dirs["user-data"], "User"), { recursive: true });
    const settingsFile = path.join(dirs["user-data"], "User/settings.json");
    fs.writeFileSync(settingsFile, JSON.stringify(settings, null, 2));
    // code-server's window is remote: `machine`-scoped settings (how the server starts, the
    // endpoint) come from the remote machine's settings, so they are written there too.
    const machine = Object.fromEntries(
      Object.entries(settings).filter(([key]) => ["tunacode.server.command", "tunacode.server.env", "tunacode.baseUrl", "tunacode.permissions"].includes(key)),
    );
    fs.mkdirSync(path.join(dirs["user-data"], "Machine"), { recursive: true });
    const machineFile = path.join(dirs["user-data"], "Machine/settings.json");
    fs.writeFileSync(machineFile, JSON.stringify(machine, null, 2));

    // Install the packaged extension, then start code-server in its own process group.
    const csArgs = ["--user-data-dir", dirs["user-data"], "--extensions-dir", dirs.extensions];
    log(`installing ${path.basename(tools.VSIX)}`);
    const install = spawnSync(tools.NODE24, [tools.CODE_SERVER, ...csArgs, "--install-extension", tools.VSIX], {
      env: baseEnv,
      encoding: "utf8",
      timeout: 120_000,
    });
    fs.writeFileSync(path.join(artifacts, "install-extension.log"), `${install.stdout}\n${install.stderr}`);
    if (install.status !== 0) throw new Error(`installing the .vsix failed (exit ${install.status}): ${install.stderr || install.stdout}`);

    const port = await freePort();
    const configFile = path.join(tmp, "code-server.yaml");
    fs.writeFileSync(configFile, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
    log(`starting code-server on port ${port}`);
    codeServer = startGroup(
      tools.NODE24,
      [
        tools.CODE_SERVER,
        "--bind-addr", `127.0.0.1:${port}`,
        "--auth", "none",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--reconnection-grace-time", "3",
        "--config", configFile,
        ...csArgs,
        dirs.workspace,
      ],
      { env: baseEnv, cwd: dirs.workspace, logFile: path.join(artifacts, "code-server.log") },
    );
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 60_000);

    // The browser.
    const { chromium } = await import("playwright-core");
    context = await chromium.launchPersistentContext(dirs.browser, {
      executablePath: tools.CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 820 },
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    summary.versions = { chromium: context.browser()?.version() };

    const scenario = { changes: runChangesScenario, control: runControlScenario, firstrun: runFirstRunScenario }[opts.scenario] ?? runScenario;
    summary.scenario = opts.scenario;
    await scenario({
      workspace: dirs.workspace,
      context,
      url: `http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`,
      extensionId: EXTENSION_ID,
      modelRoot,
      artifacts,
      summary,
      log,
      // The user settings as they are on disk (the scenario edits them in VS Code).
      readSettings: () => JSON.parse(fs.readFileSync(settingsFile, "utf8")),
      // The user settings changed on disk (VS Code watches the file): e.g. the colour theme.
      writeUserSettings: (changes) => {
        const now = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
        fs.writeFileSync(settingsFile, JSON.stringify({ ...now, ...changes }, null, 2));
      },
      // The remote machine's settings (machine-scoped keys), changed on disk (VS Code watches it).
      writeMachineSettings: (changes) => {
        const now = JSON.parse(fs.readFileSync(machineFile, "utf8"));
        fs.writeFileSync(machineFile, JSON.stringify({ ...now, ...changes }, null, 2));
      },
      serverCommand,
      // A Python that does not have the server package (a common broken setup).
      brokenPython: findBrokenPython(),
    });
    summary.ok = summary.steps.length > 0 && summary.steps.every((s) => s.ok);
  } catch (err) {
    summary.ok = false;
    summary.error = err instanceof Error ? `${err.message}` : String(err);
    log(`FAILED: ${summary.error}`);
  } finally {
    if (context) await context.close().catch(() => undefined);
    if (codeServer) {
      summary.cleanup.codeServerGone = await stopGroup(codeServer.pgid);
    }
    if (model) summary.cleanup.modelGone = await stopGroup(model.pgid);
    summary.cleanup.browserClosed = context ? !context.browser()?.isConnected() : true;
    collectLogs(dirs["user-data"], artifacts);
    if (!opts["keep-temp"]) fs.rmSync(tmp, { recursive: true, force: true });
    else summary.tempDir = tmp;
    summary.durationMs = Date.now() - started;
    const cleanedUp = Object.values(summary.cleanup).every(Boolean);
    if (!cleanedUp) {
      summary.ok = false;
      summary.error = `${summary.error ?? ""} processes left running: ${JSON.stringify(summary.cleanup)}`.trim();
    }
    fs.mkdirSync(path.dirname(summaryFile), { recursive: true });
    fs.writeFileSync(summaryFile, JSON.stringify(summary, null, 2));
    log(`${summary.ok ? "PASSED" : "FAILED"} in ${(summary.durationMs / 1000).toFixed(1)} s; summary: ${summaryFile}`);
    for (const step of summary.steps) log(`  ${step.ok ? "ok  " : "FAIL"} ${step.name} (${step.ms} ms)${step.error ? `: ${step.error}` : ""}`);
  }
  // Belt and braces: a still-living group here is a bug in this script, not a pass.
  if (codeServer && groupAlive(codeServer.pgid)) process.kill(-codeServer.pgid, "SIGKILL");
  if (model && groupAlive(model.pgid)) process.kill(-model.pgid, "SIGKILL");
  process.exitCode = summary.ok ? 0 : 1;
}

function findBrokenPython() {
  for (const candidate of ["/usr/bin/python3", "/usr/local/bin/python3"]) {
    if (!fs.existsSync(candidate)) continue;
    const probe = spawnSync(candidate, ["-c", "import tunacode_lsp"], { encoding: "utf8" });
    if (probe.status !== 0) return candidate;
  }
  throw new Error("no Python without tunacode_lsp found for the broken-server step");
}

/** Copies the extension's log channel and the extension host's log into the artifacts. */
function collectLogs(userDataDir, into) {
  const logsRoot = path.join(userDataDir, "logs");
  if (!fs.existsSync(logsRoot)) return;
  const wanted = (name) => /TunaCode|tunacode|exthost\.log$|remoteexthost\.log$/.test(name);
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (wanted(entry.name)) fs.copyFileSync(full, path.join(into, `log-${entry.name.replace(/[^\w.-]/g, "_")}`));
    }
  };
  walk(logsRoot);
}

await main();
