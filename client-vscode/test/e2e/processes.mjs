// Process helpers for the end-to-end run: start programs in their own process group,
// wait for a line or an HTTP answer, and stop a whole group for sure.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";

/** Starts `command` as the leader of a new process group (setsid), logging to `logFile`. */
export function startGroup(command, args, { env, cwd, logFile }) {
  const log = fs.openSync(logFile, "a");
  const child = spawn(command, args, { env, cwd, detached: true, stdio: ["ignore", "pipe", log] });
  const lines = [];
  const waiters = [];
  let buffer = "";
  child.stdout.on("data", (chunk) => {
    fs.appendFileSync(logFile, chunk);
    buffer += chunk.toString();
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      lines.push(line);
      for (const w of [...waiters]) if (w.test(line)) w.resolve(line);
    }
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  child.on("exit", () => fs.closeSync(log));
  return {
    child,
    pgid: child.pid,
    exited,
    /** Resolves with the first stdout line matching `re`, rejects on exit or timeout. */
    waitForLine(re, timeoutMs) {
      const seen = lines.find((l) => re.test(l));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const w = { test: (l) => re.test(l), resolve: (l) => done(() => resolve(l)) };
        const timer = setTimeout(() => done(() => reject(new Error(`no line matching ${re} within ${timeoutMs} ms`))), timeoutMs);
        exited.then(({ code, signal }) => done(() => reject(new Error(`${command} exited (${code ?? signal}) before printing ${re}`))));
        let finished = false;
        function done(fn) {
          if (finished) return;
          finished = true;
          clearTimeout(timer);
          waiters.splice(waiters.indexOf(w), 1);
          fn();
        }
        waiters.push(w);
      });
    },
  };
}

/** Whether any process of group `pgid` still exists. */
export function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
}

/** SIGTERM the group, then SIGKILL what is left; resolves true when the group is gone. */
export async function stopGroup(pgid, graceMs = 4000) {
  if (!pgid || !groupAlive(pgid)) return true;
  try {
    process.kill(-pgid, "SIGTERM");
  } catch {
    /* already gone */
  }
  if (await waitUntil(() => !groupAlive(pgid), graceMs)) return true;
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    /* already gone */
  }
  return waitUntil(() => !groupAlive(pgid), 3000);
}

/** Polls `predicate` (sync or async) until true or the timeout; resolves with the last value. */
export async function waitUntil(predicate, timeoutMs, intervalMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** GETs `url` until it answers 200, for at most `timeoutMs`. */
export async function waitForHttp(url, timeoutMs) {
  const ok = await waitUntil(async () => {
    try {
      const res = await fetch(url);
      return res.ok;
    } catch {
      return false;
    }
  }, timeoutMs, 200);
  if (!ok) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}
