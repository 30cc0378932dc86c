// A minimal stand-in for the `vscode` module, enough for src/approvals.ts and src/settings.ts in unit tests.
export class EventEmitter {
  listeners = new Set();
  event = (fn) => {
    this.listeners.add(fn);
    return { dispose: () => this.listeners.delete(fn) };
  };
  fire(value) {
    for (const fn of [...this.listeners]) fn(value);
  }
  dispose() {
    this.listeners.clear();
  }
}

export class CancellationTokenSource {
  emitter = new EventEmitter();
  token = {
    isCancellationRequested: false,
    onCancellationRequested: (fn) => this.emitter.event(fn),
  };
  cancel() {
    if (this.token.isCancellationRequested) return;
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
}

export const ProgressLocation = { Notification: 15 };

/** Notifications shown through withProgress: {options, messages, closed, cancel()}. */
// On globalThis: the bundle of approvals.ts holds its own copy of this module.
export const shown = (globalThis.__vscodeStubShown ??= []);

export const window = {
  withProgress(options, task) {
    const close = new CancellationTokenSource();
    const record = { options, messages: [], closed: false, cancel: () => close.cancel() };
    shown.push(record);
    const promise = Promise.resolve(task({ report: (m) => record.messages.push(m.message) }, close.token));
    promise.then(() => (record.closed = true));
    return promise;
  },
};

/**
 * Settings by key, each as `inspect` returns it ({defaultValue, globalValue, workspaceValue,
 * workspaceFolderValue}); `get` merges them the way VS Code does for a window-scoped setting.
 */
export const settings = (globalThis.__vscodeStubSettings ??= {});

export const workspace = {
  getConfiguration(_section) {
    return {
      inspect: (key) => (key in settings ? { key, ...settings[key] } : undefined),
      get(key, fallback) {
        const s = settings[key] ?? {};
        for (const value of [s.workspaceFolderValue, s.workspaceValue, s.globalValue, s.defaultValue]) {
          if (value !== undefined) return value;
        }
        return fallback;
      },
    };
  },
};
