/**
 * Starts, stops and restarts the TunaCode language server through vscode-languageclient
 * (stdio), and gives the rest of the extension three things: `executeCommand`, the
 * `tunacode/event` stream, and the server's state.
 */

import * as vscode from "vscode";
import {
  type CancellationToken,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ProgressToken,
  type ServerOptions,
  State,
  WorkDoneProgress,
  type WorkDoneProgressBegin,
  type WorkDoneProgressEnd,
  type WorkDoneProgressReport,
} from "vscode-languageclient/node";
import { EVENT_NOTIFICATION, type TunaEvent } from "./protocol";
import { resolveServerCommand, systemProbes } from "./serverCommand";
import { SECTION, initializationOptions, readSettings } from "./settings";
import type { BannerAction, ServerState } from "./webview/state";

export interface ServerStatus {
  state: ServerState;
  message?: string;
  action?: BannerAction;
}

type Progress = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

export class TunaServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private readonly eventEmitter = new vscode.EventEmitter<TunaEvent>();
  private readonly statusEmitter = new vscode.EventEmitter<ServerStatus>();
  private currentStatus: ServerStatus = { state: "stopped" };

  /** Every `tunacode/event` notification from the server. */
  readonly onEvent = this.eventEmitter.event;
  readonly onStatus = this.statusEmitter.event;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  get status(): ServerStatus {
    return this.currentStatus;
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
    const env = { ...process.env, ...settings.server.env };
    const resolved = resolveServerCommand(settings.server, systemProbes(env));
    if (!resolved.ok) {
      this.log.error(`${resolved.message} (tried: ${resolved.tried.join(", ")})`);
      this.setStatus({ state: "failed", message: resolved.message, action: "openSettings" });
      void vscode.window.showErrorMessage(resolved.message, "Open Settings", "Show Logs").then((choice) => {
        if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "tunacode.server");
        if (choice === "Show Logs") this.log.show();
      });
      return;
    }

    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    this.log.info(`Starting the server (${resolved.source}): ${[resolved.command, ...resolved.args].join(" ")}`);
    const serverOptions: ServerOptions = {
      command: resolved.command,
      args: resolved.args,
      // No `transport`: TransportKind.stdio would append `--stdio` to the command line.
      options: { env, cwd },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.log,
      traceOutputChannel: this.log,
      initializationOptions: initializationOptions(settings.agent),
      // The server owns its own recovery; a crash loop should not hide behind restarts.
      connectionOptions: { maxRestartCount: 2 },
      middleware: {
        workspace: {
          // Answer section `tunacode` with the same cleaned options as initializationOptions:
          // empty settings are "not set" (left out), and client-only keys stay here.
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) return answers;
            const options = initializationOptions(readSettings().agent);
            return params.items.map((item, i) => {
              if (item.section === SECTION) return options;
              if (item.section?.startsWith(`${SECTION}.`)) return options[item.section.slice(SECTION.length + 1)] ?? null;
              return answers[i];
            });
          },
        },
      },
    };
    const client = new LanguageClient("tunacode", "TunaCode", serverOptions, clientOptions);
    client.onNotification(EVENT_NOTIFICATION, (event: TunaEvent) => this.eventEmitter.fire(event));
    client.onDidChangeState((change) => {
      if (this.client !== client) return;
      if (change.newState === State.Running) this.setStatus({ state: "running" });
      if (change.newState === State.Stopped) {
        this.setStatus({
          state: "stopped",
          message: "The TunaCode server stopped. Restart it, or look at the logs for why.",
          action: "restart",
        });
      }
    });
    this.client = client;
    this.setStatus({ state: "starting" });
    try {
      await client.start();
      const info = client.initializeResult?.serverInfo;
      this.log.info(`Server running: ${info?.name ?? "tunacode-lsp"} ${info?.version ?? ""}`.trim());
      this.setStatus({ state: "running" });
    } catch (err) {
      const message = `TunaCode: the server failed to start: ${errorMessage(err)}`;
      this.log.error(message);
      this.client = undefined;
      await client.dispose(2000).catch(() => undefined);
      this.setStatus({ state: "failed", message: `${message}. See Show Logs.`, action: "showLogs" });
    }
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (err && typeof err === "object" && "message" in err) return String((err as { message: unknown }).message);
  return String(err);
}
