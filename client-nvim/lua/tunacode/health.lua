--- :checkhealth tunacode: the server command and its version, the model and its key, the
--- session store, the shell sandbox (bwrap), the MCP servers of a running server. A running server answers `tunacode.status` for
--- its version and store; otherwise the command is run with --version and the store path is
--- worked out as the server does (sessionStore, $TUNACODE_HOME, $XDG_DATA_HOME, ~/.local/share).

local H = {}

--- The key variable of each model provider (the server's agent/models.py); nil: optional.
local KEYS = { openai = 'OPENAI_API_KEY', openrouter = 'OPENROUTER_API_KEY' }

--- The server command with --version instead of its arguments.
---@param cmd string[]
---@return string[]
function H.version_cmd(cmd)
  for i = 1, #cmd - 1 do
    if cmd[i] == '-m' then
      return vim.list_extend(vim.list_slice(cmd, 1, i + 1), { '--version' })
    end
  end
  return { cmd[1], '--version' }
end

---@param settings table
---@return string
function H.store_path(settings)
  if type(settings.sessionStore) == 'string' and settings.sessionStore ~= '' then
    return vim.fs.joinpath(vim.fs.normalize(settings.sessionStore), 'sessions.sqlite3')
  end
  local home = vim.env.TUNACODE_HOME
  if home and home ~= '' then
    return vim.fs.joinpath(vim.fs.normalize(home), 'sessions.sqlite3')
  end
  local data = vim.env.XDG_DATA_HOME
  if not (data and data:sub(1, 1) == '/') then
    data = vim.fs.joinpath(vim.env.HOME or vim.fn.expand('~'), '.local', 'share')
  end
  return vim.fs.joinpath(data, 'tunacode-lsp', 'sessions.sqlite3')
end

---@return table? the running server's tunacode.status
local function running_status()
  local client = vim.lsp.get_clients({ name = 'tunacode' })[1]
  if not (client and client.initialized) then
    return nil
  end
  local answer = client:request_sync('workspace/executeCommand',
    { command = 'tunacode.status', arguments = { vim.empty_dict() } }, 5000)
  return answer and answer.result or nil
end

local function check_server(cmd, status)
  vim.health.start('TunaCode server')
  if vim.fn.executable(cmd[1]) ~= 1 then
    vim.health.error(('server command not found: %s'):format(cmd[1]), {
      'install it from a checkout: pipx install /path/to/checkout',
      "or set cmd = { '/path/to/checkout/.venv/bin/tunacode-lsp' } in require('tunacode').setup()",
    })
    return
  end
  vim.health.ok('server command: ' .. table.concat(cmd, ' '))
  if status then
    vim.health.ok(('running: version %s, protocol %s'):format(status.version, tostring(status.protocolVersion)))
    return
  end
  local ok, done = pcall(function()
    return vim.system(H.version_cmd(cmd), { text = true }):wait(10000)
  end)
  if ok and done.code == 0 then
    vim.health.ok('version: ' .. vim.trim(done.stdout))
  else
    local said = ok and vim.trim((done.stderr or '') .. (done.stdout or '')) or tostring(done)
    local last = vim.split(said, '\n', { plain = true })
    vim.health.error(('%s failed: %s'):format(table.concat(H.version_cmd(cmd), ' '), last[#last] or ''))
  end
end

local function check_model(settings)
  vim.health.start('Model')
  local model = settings.model or vim.env.TUNACODE_MODEL
  if not model or model == '' then
    local fallback = (not vim.env.OPENAI_API_KEY and vim.env.OPENROUTER_API_KEY) and 'openrouter:moonshotai/kimi-k2.5'
      or 'openai:gpt-4.1'
    vim.health.info(('no model set: the server uses %s (settings.model sets one)'):format(fallback))
    model = fallback
  else
    vim.health.ok('model: ' .. model)
  end
  local provider = model:match('^([%w%-]+):') or ''
  if provider == 'openai-compatible' then
    if not settings.baseUrl and not vim.env.TUNACODE_BASE_URL then
      vim.health.error('openai-compatible models need baseUrl (e.g. http://127.0.0.1:11434/v1)')
    else
      vim.health.ok('base URL: ' .. (settings.baseUrl or vim.env.TUNACODE_BASE_URL))
    end
    return
  end
  local key = KEYS[provider]
  if not key then
    vim.health.warn(('unknown provider %q (openai, openrouter, openai-compatible)'):format(provider))
  elseif (vim.env[key] or '') ~= '' or (vim.env.TUNACODE_API_KEY or '') ~= '' then
    vim.health.ok(('API key set (%s or TUNACODE_API_KEY)'):format(key))
  else
    vim.health.error(('no API key: set %s (or TUNACODE_API_KEY) in the environment Neovim starts from'):format(key))
  end
end

local function check_store(settings, status)
  vim.health.start('Session store')
  local path = status and status.sessionStore or H.store_path(settings)
  local dir = vim.fs.dirname(path)
  if vim.uv.fs_stat(path) then
    vim.health.ok('session store: ' .. path)
  elseif vim.fn.isdirectory(dir) == 1 and vim.fn.filewritable(dir) == 2 then
    vim.health.ok(('session store: %s (created on the first request)'):format(path))
  elseif vim.fn.isdirectory(dir) == 0 then
    vim.health.info(('session store: %s (its folder is created on the first request)'):format(path))
  else
    vim.health.error(('session store folder not writable: %s'):format(dir))
  end
end

local function check_sandbox()
  vim.health.start('Shell sandbox')
  if vim.fn.executable('bwrap') == 1 then
    vim.health.ok('bwrap found: ' .. vim.fn.exepath('bwrap'))
  else
    vim.health.warn('bwrap not found: shell commands cannot be sandboxed', {
      'install bubblewrap (apt install bubblewrap, dnf install bubblewrap)',
    })
  end
end

--- What to say about each MCP server of `tunacode.status` (`mcpServers: [{name, state,
--- tools, error?}]`): a health level, the line, and advice; shared by :TunaStatus.
---@param servers table[]?
---@return {level: 'ok'|'info'|'warn'|'error', text: string, advice?: string[]}[]
function H.mcp_report(servers)
  local out = {}
  for _, server in ipairs(type(servers) == 'table' and servers or {}) do
    local name, state = tostring(server.name), tostring(server.state)
    local tools = tonumber(server.tools) or 0
    local error = type(server.error) == 'string' and server.error ~= '' and server.error or nil
    if state == 'ready' then
      table.insert(out, { level = 'ok', text = ('%s: ready, %d tool%s'):format(name, tools, tools == 1 and '' or 's') })
    elseif state == 'starting' then
      table.insert(out, { level = 'info', text = name .. ': starting' })
    elseif state == 'failed' then
      table.insert(out, { level = 'error', text = ('%s: failed: %s'):format(name, error or 'it stopped'), advice = {
        "check its command in the mcpServers setting or the workspace's .mcp.json",
        'the server retries a few times, then gives up until the settings change or it restarts',
      } })
    elseif state == 'not_allowed' then
      table.insert(out, { level = 'warn', text = name .. ": not allowed to start (the workspace's .mcp.json defines it)",
        advice = { "with approval = 'ask' the server asks once whether to start it; 'read-only' never starts it" } })
    else
      table.insert(out, { level = 'warn', text = ('%s: %s%s'):format(name, state, error and (': ' .. error) or '') })
    end
  end
  return out
end

local function check_mcp(status)
  vim.health.start('MCP servers')
  if not status then
    vim.health.info('the server is not running: their state shows once a command (e.g. :TunaStatus) started it')
    return
  end
  local report = H.mcp_report(status.mcpServers)
  if #report == 0 then
    vim.health.info('no MCP servers configured (the mcpServers setting, or .mcp.json in the workspace)')
  end
  for _, item in ipairs(report) do
    vim.health[item.level](item.text, item.advice)
  end
end

function H.check()
  local tunacode = require('tunacode')
  local settings = tunacode.options.settings or {}
  local cmd = tunacode.options.cmd or tunacode.default_cmd()
  local status = running_status()
  check_server(cmd, status)
  check_model(settings)
  check_store(settings, status)
  check_sandbox()
  check_mcp(status)
end

return H
