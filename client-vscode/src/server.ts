/**
 * Starts, stops and restarts the TunaCode language server through vscode-languageclient
 * (stdio), and gives the rest of the extension three things: `executeCommand`, the
 * `tunacode/event` stream, and the server's state.
 */

import { type ChildProcess, spawn } from "node:child_process";
import * as vscode from "vscode";
import {
  type CancellationToken,
  type ClientCapabilities,
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  type FeatureState,
  RevealOutputChannelOn,
  type StaticFeature,
  LanguageClient,
  type LanguageClientOptions,
  type ProgressToken,
  type ServerOptions,
  MessageType,
  ShowMessageNotification,
  State,
  WorkDoneProgress,
  type WorkDoneProgressBegin,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
} from "vscode-languageclient/node";
import {
  type ApproveParams,
  type ApproveResult,
  CLIENT_CAPABILITIES,
  ClientRequests,
  type DiagnosticsParams,
  EVENT_NOTIFICATION,
  type SaveDocumentsParams,
  type SaveDocumentsResult,
  type TunaEvent,
} from "./protocol";
import { explainFailure, resolveServerCommand, systemProbes } from "./serverCommand";
import { serverEnv } from "./apiKeys";
import { SECTION, configurationAnswer, initializationOptions, readSettings } from "./settings";
import type { BannerAction, ServerState } from "./webview/state";

export interface ServerStatus {
  state: ServerState;
  message?: string;
  action?: BannerAction;
}

type Progress = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

/** What the extension answers to the server's v2 requests. */
export interface ClientRequestHandlers {
  approve(params: ApproveParams, token: CancellationToken): Promise<ApproveResult>;
  saveDocuments(params: SaveDocumentsParams): Promise<SaveDocumentsResult>;
  diagnostics(params: DiagnosticsParams): Promise<unknown>;
}

/** Advertises `capabilities.experimental.tunacode` (protocol v2) in `initialize`. */
class TunaCapabilities implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    experimental.tunacode = { ...CLIENT_CAPABILITIES };
    capabilities.experimental = experimental;
  }
  initialize(): void {}
  getState(): FeatureState {
    return { kind: "static" };
  }
  clear(): void {}
}

/**
 * The language client without its executeCommand feature: that feature registers every
 * server command (`tunacode.request`, …) as a VS Code command, which cluttered the palette
 * and Keyboard Shortcuts. The extension sends `workspace/executeCommand` itself.
 */
class TunaLanguageClient extends LanguageClient {
  override registerFeature(feature: Parameters<LanguageClient["registerFeature"]>[0]): void {
    const method = (feature as { registrationType?: { method?: string } }).registrationType?.method;
    if (method === ExecuteCommandRequest.method) return;
    super.registerFeature(feature);
  }

  /** Logged only: TunaServer shows one message with the cause, not the client's toasts. */
  override error(message: string, data?: unknown): void {
    super.error(message, data, false);
  }
}

/** Lines of the server's stderr kept to explain a failed start. */
const STDERR_TAIL = 40;

export class TunaServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private readonly eventEmitter = new vscode.EventEmitter<TunaEvent>();
  private readonly statusEmitter = new vscode.EventEmitter<ServerStatus>();
  private currentStatus: ServerStatus = { state: "stopped" };
  private child: ChildProcess | undefined;
  private stderrTail: string[] = [];
  private spawnError: Error | undefined;
  private exited: Promise<number | null> | undefined;
  private handlers: ClientRequestHandlers | undefined;

  /** Every `tunacode/event` notification from the server. */
  readonly onEvent = this.eventEmitter.event;
  private readonly messageEmitter = new vscode.EventEmitter<string>();
  /** Every `window/showMessage` text (shown as usual too): e.g. an MCP server that failed. */
  readonly onShowMessage = this.messageEmitter.event;
  readonly onStatus = this.statusEmitter.event;

  /** Provider keys kept in SecretStorage (apiKeys.ts), for the server's environment. */
  storedKeys: Record<string, string> = {};

  constructor(private readonly log: vscode.LogOutputChannel) {}

  get status(): ServerStatus {
    return this.currentStatus;
  }

  /** Set once, before start: the handlers of the server's requests to the client. */
  setRequestHandlers(handlers: ClientRequestHandlers): void {
    this.handlers = handlers;
  }

  async start(): Promise<void> {
    if (this.client || this.starting) return this.starting;
    this.starting = this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  async restart(): Promise<void> {
    this.log.info("Restarting the TunaCode server");
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    if (this.starting) await this.starting.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      if (client.isRunning()) await client.stop(3000);
    } catch (err) {
      this.log.warn(`Stopping the server: ${errorMessage(err)}`);
    }
    await client.dispose(3000).catch(() => undefined);
    this.killChild();
    this.setStatus({ state: "stopped" });
  }

  /** `workspace/executeCommand` with the contract's single-object argument. */
  async executeCommand<T>(
    command: string,
    params: object,
    options: { token?: CancellationToken; workDoneToken?: ProgressToken } = {},
  ): Promise<T> {
    const client = await this.readyClient();
    return (await client.sendRequest(
      ExecuteCommandRequest.type,
      { command, arguments: [params], workDoneToken: options.workDoneToken },
      options.token,
    )) as T;
  }

  /** Listens to `$/progress` for a token the extension passed as `workDoneToken`. */
  async onProgress(token: ProgressToken, handler: (value: Progress) => void): Promise<vscode.Disposable> {
    const client = await this.readyClient();
    return client.onProgress(WorkDoneProgress.type, token, handler);
  }

  dispose(): void {
    void this.stop();
    this.eventEmitter.dispose();
    this.statusEmitter.dispose();
  }

  private async readyClient(): Promise<LanguageClient> {
    if (!this.client) await this.start();
    if (this.starting) await this.starting;
    const client = this.client;
    if (!client || !client.isRunning()) {
      throw new Error(this.currentStatus.message ?? "The TunaCode server is not running.");
    }
    return client;
  }

  private setStatus(status: ServerStatus): void {
    this.currentStatus = status;
    this.statusEmitter.fire(status);
  }

  private async doStart(): Promise<void> {
    const settings = readSettings();
    const env = serverEnv(process.env, this.storedKeys, settings.server.env);
    const resolved = resolveServerCommand(settings.server, systemProbes(env));
    if (!resolved.ok) {
      this.log.error(`${resolved.message} (tried: ${resolved.tried.join(", ")})`);
      this.setStatus({ state: "failed", message: resolved.message, action: "retry" });
      this.showFailure(resolved.message);
      return;
    }

    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    this.log.info(`Starting the server (${resolved.source}): ${[resolved.command, ...resolved.args].join(" ")}`);
    // The extension spawns the server itself: it keeps the stderr tail to explain a failed
    // start, and logs stderr at trace level once running (the server's log already arrives
    // as window/logMessage; both at info showed every line twice).
    this.stderrTail = [];
    this.spawnError = undefined;
    let running = false;
    const serverOptions: ServerOptions = async () => {
      const child = spawn(resolved.command, resolved.args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
      this.child = child;
      this.exited = new Promise((resolve) => {
        child.once("error", (err) => {
          this.spawnError = err;
          resolve(null);
        });
        child.once("exit", (code, signal) => {
          if (code === 0 || signal === "SIGTERM") this.log.info(`Server process exited (${code ?? signal})`);
          else this.log.warn(`Server process exited with ${code !== null ? `code ${code}` : `signal ${signal}`}`);
          resolve(code);
        });
      });
      let partial = "";
      child.stderr?.setEncoding("utf8");
      child.stderr?.on("data", (chunk: string) => {
        const lines = (partial + chunk).split(/\r?\n/);
        partial = lines.pop() ?? "";
        for (const line of lines) {
          if (!line.trim()) continue;
          this.stderrTail.push(line);
          if (this.stderrTail.length > STDERR_TAIL) this.stderrTail.shift();
          if (running) this.log.trace(`[server] ${line}`);
          else this.log.info(`[server] ${line}`);
        }
      });
      child.stderr?.on("end", () => {
        if (partial.trim()) this.stderrTail.push(partial);
      });
      // Ignore EPIPE on a server that died: the cause is reported once, from stderr.
      child.stdin?.on("error", (err) => this.log.debug(`server stdin: ${err.message}`));
      return { reader: child.stdout!, writer: child.stdin! };
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.log,
      traceOutputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // Sends workspace/didChangeConfiguration on a change; the server then pulls section
      // `tunacode` (answered by the middleware below) and applies it live.
      synchronize: { configurationSection: SECTION },
      // One message, with the cause, from this class; not the client's stacked toasts.
      initializationFailedHandler: () => false,
      errorHandler: {
        error: () => ({ action: ErrorAction.Shutdown, handled: true }),
        closed: () => ({ action: CloseAction.DoNotRestart, handled: true }),
      },
      initializationOptions: initializationOptions(settings.agent),
      middleware: {
        workspace: {
          // Answer section `tunacode` with every server setting explicit: `null` is "not set"
          // (a cleared setting is unset on the server), and client-only keys stay here.
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) return answers;
            const options = configurationAnswer(readSettings().agent);
            return params.items.map((item, i) => {
              if (item.section === SECTION) return options;
              if (item.section?.startsWith(`${SECTION}.`)) return options[item.section.slice(SECTION.length + 1)] ?? null;
              return answers[i];
            });
          },
        },
      },
    };
    const client = new TunaLanguageClient("tunacode", "TunaCode", serverOptions, clientOptions);
    client.registerFeature(new TunaCapabilities());
    client.onNotification(EVENT_NOTIFICATION, (event: TunaEvent) => this.eventEmitter.fire(event));
    // Shown as the language client does, and told to the panel (an MCP server's failure
    // refreshes its status line at once).
    client.onNotification(ShowMessageNotification.type, (message) => {
      if (message.type === MessageType.Error) void vscode.window.showErrorMessage(message.message);
      else if (message.type === MessageType.Warning) void vscode.window.showWarningMessage(message.message);
      else void vscode.window.showInformationMessage(message.message);
      this.messageEmitter.fire(message.message);
    });
    const handlers = this.handlers;
    if (handlers) {
      client.onRequest(ClientRequests.approve, (params: ApproveParams, token) => handlers.approve(params, token));
      client.onRequest(ClientRequests.saveDocuments, (params: SaveDocumentsParams) => handlers.saveDocuments(params));
      client.onRequest(ClientRequests.diagnostics, (params: DiagnosticsParams) => handlers.diagnostics(params));
    }
    client.onDidChangeState((change) => {
      if (this.client !== client) return;
      if (change.newState === State.Running) this.setStatus({ state: "running" });
      if (change.newState === State.Stopped && this.currentStatus.state === "running") {
        void this.reportStopped();
      }
    });
    this.client = client;
    this.setStatus({ state: "starting" });
    try {
      await client.start();
      // start() can resolve although the connection closed during initialize.
      if (!client.isRunning()) throw new Error("the server closed the connection while starting");
      running = true;
      const info = client.initializeResult?.serverInfo;
      this.log.info(`Server running: ${info?.name ?? "tunacode-lsp"} ${info?.version ?? ""}`.trim());
      this.setStatus({ state: "running" });
    } catch (err) {
      this.client = undefined;
      await client.dispose(2000).catch(() => undefined);
      const cause = await this.failureCause(errorMessage(err), [resolved.command, ...resolved.args].join(" "));
      this.killChild();
      const message = `TunaCode: the server failed to start: ${cause}`;
      this.log.error(message);
      this.setStatus({ state: "failed", message, action: "retry" });
      this.showFailure(message);
    }
  }

  private async reportStopped(): Promise<void> {
    const cause = await this.failureCause("the connection closed", "the server");
    const message = `TunaCode: the server stopped: ${cause}`;
    this.log.error(message);
    if (this.client) {
      const client = this.client;
      this.client = undefined;
      void client.dispose(2000).catch(() => undefined);
    }
    this.setStatus({ state: "stopped", message, action: "retry" });
    this.showFailure(message);
  }

  private showFailure(message: string): void {
    void vscode.window.showErrorMessage(message, "Retry", "Open Settings", "Show Logs").then((choice) => {
      if (choice === "Retry") void this.restart();
      if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "tunacode.server");
      if (choice === "Show Logs") this.log.show();
    });
  }

  /** The real reason a start failed: the spawn error, else the server's last stderr words. */
  private async failureCause(fallback: string, commandLine: string): Promise<string> {
    if (this.exited) {
      await Promise.race([this.exited, new Promise((r) => setTimeout(r, 1500))]);
    }
    return explainFailure({
      spawnError: this.spawnError,
      stderr: this.stderrTail,
      fallback,
      commandLine,
    });
  }

  private killChild(): void {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill();
      }, 2000);
    }
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (err && typeof err === "object" && "message" in err) return String((err as { message: unknown }).message);
  return String(err);
}
