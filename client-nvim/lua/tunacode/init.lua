--- TunaCode for Neovim 0.11+: ask the agent from the editor over plain LSP.
---
--- require('tunacode').setup({ settings = { model = 'openai:gpt-4.1' } })
--- then :TunaAsk {prompt}, :TunaChat, :TunaStop, :TunaSessions, :TunaNew, :TunaChanges,
--- :TunaRewind, :TunaAllows, :TunaStatus (plugin/tunacode.lua).
---
--- Everything goes through `workspace/executeCommand` (tunacode.request, tunacode.abort,
--- tunacode.session.*); the `tunacode/event` notifications stream the answer into a
--- scratch buffer; tool calls show as LSP work-done progress (LspProgress,
--- vim.lsp.status()); approvals arrive as `tunacode/approve` and are asked in a float
--- (approve.lua; an older server sends window/showMessageRequest, which Neovim asks through
--- vim.ui.select); the workspace's file buffers are attached to the server, so its edits of
--- them come as `workspace/applyEdit` and `tunacode/saveDocuments` writes the buffers the
--- agent edited (save.lua).
--- Each event is also fired as
--- `User TunaCodeEvent` (data = the event) for statuslines and scripts.

local view = require('tunacode.view')
local approve = require('tunacode.approve')
local save = require('tunacode.save')
local status = require('tunacode.status')
local diagnostics = require('tunacode.diagnostics')
local filechanged = require('tunacode.filechanged')

local M = {}

local defaults = {
  --- command that starts the server; default: tunacode-lsp if on PATH, else python3 -P -m tunacode_lsp
  cmd = nil, ---@type string[]?
  --- the tunacode.* settings: model, baseUrl, approval, maxTurns, requestTimeout, sessionStore, ...
  settings = {},
  --- files or folders that mark the workspace root (else the current directory)
  root_markers = { '.git' },
  --- echo the agent's progress (tool lifecycle) in the command line
  progress = true,
  --- milliseconds to wait for the server to initialize
  start_timeout = 15000,
  --- default key maps (M.DEFAULT_KEYMAPS), set by setup(); false: none. A key the user has
  --- already mapped is left alone.
  keymaps = true,
}

--- The default key maps: <leader>t then c chat, a ask (a visual selection goes along), s stop,
--- x changes, r rewind (pick a request), n new session.
M.DEFAULT_KEYMAPS = {
  { 'n', '<leader>tc', '<Cmd>TunaChat<CR>', 'TunaCode: chat' },
  { 'n', '<leader>ta', '<Cmd>TunaAsk<CR>', 'TunaCode: ask' },
  { 'x', '<leader>ta', ':TunaAsk<CR>', 'TunaCode: ask about the selection' },
  { 'n', '<leader>ts', '<Cmd>TunaStop<CR>', 'TunaCode: stop the request' },
  { 'n', '<leader>tx', '<Cmd>TunaChanges<CR>', 'TunaCode: changes of the last request' },
  { 'n', '<leader>tr', '<Cmd>TunaRewind!<CR>', 'TunaCode: rewind to before a request' },
  { 'n', '<leader>tn', '<Cmd>TunaNew<CR>', 'TunaCode: new session' },
}

--- Set the default key maps, each only where the user has no mapping of that key.
function M.set_keymaps()
  for _, map in ipairs(M.DEFAULT_KEYMAPS) do
    local mode, lhs, rhs, desc = map[1], map[2], map[3], map[4]
    if vim.fn.maparg(lhs, mode) == '' then
      vim.keymap.set(mode, lhs, rhs, { desc = desc, silent = true })
    end
  end
end

M.options = vim.deepcopy(defaults)

--- What the module knows of the conversation in this Neovim.
M.state = {
  session_id = nil, ---@type string? the session :TunaAsk continues
  request_id = nil, ---@type string? the running request, once its request_start arrived
  busy = false, ---@type boolean a request was sent and has not answered yet
  stop_requested = false, ---@type boolean :TunaStop came before request_start
  last_result = nil, ---@type table? the last RequestResult
  last_request_id = nil, ---@type string? the last request this Neovim started (:TunaRewind)
  mode = 'agent', ---@type 'agent'|'plan' :TunaMode; plan: read-only tools, the answer is a plan
  commands = nil, ---@type table[]? the prompt commands (tunacode.commands.list), for :TunaAsk /<Tab>
  next_prompt = nil, ---@type string? a :TunaSteer that came too late: asked once the request answers
}

local function object(tbl)
  -- an empty Lua table encodes as [], the server wants {}
  if tbl == nil or next(tbl) == nil then
    return vim.empty_dict()
  end
  return tbl
end

--- The one line a notification shows: `text` whole when it fits the command line, else its
--- first line cut to fit, ending `… (see tunacode://answer)` (`…` on a narrow screen); nil
--- when it fits.
---@param text string
---@return string?
function M.one_line(text)
  local first = text:match('^[^\n]*')
  local width = math.max(vim.o.columns - 12, 20) -- room for the ruler and showcmd
  if first == text and vim.fn.strdisplaywidth(text) <= width then
    return nil
  end
  local more = '… (see tunacode://answer)'
  if width - vim.fn.strdisplaywidth(more) < 40 then -- a narrow screen: the message first
    more = '…'
  end
  local room = width - vim.fn.strdisplaywidth(more)
  if vim.fn.strdisplaywidth(first) > room then
    first = vim.fn.strcharpart(first, 0, math.max(room, 1))
  end
  return vim.trim(first) .. more
end

--- A notification in one line (no hit-enter prompt): a message that is longer, or of more
--- lines, goes whole into the answer buffer as a note and the notification points to it.
local function notify(message, level)
  local text = 'TunaCode: ' .. message
  local short = M.one_line(text)
  if short then
    for i, line in ipairs(vim.split(message, '\n', { plain = true })) do
      view.line((i == 1 and '[note] ' or '       ') .. line)
    end
    text = short
  end
  vim.notify(text, level or vim.log.levels.INFO)
end

--- The program `name` in an absolute folder of $PATH (a relative entry such as `.` would
--- find the workspace's own file), or nil.
---@param name string
---@return string?
local function on_path(name)
  for dir in vim.gsplit(vim.env.PATH or '', ':', { plain = true }) do
    if dir:sub(1, 1) == '/' then
      local candidate = vim.fs.joinpath(dir, name)
      if vim.fn.executable(candidate) == 1 then
        return candidate
      end
    end
  end
  return nil
end

--- tunacode-lsp from $PATH, else python3 -P -m tunacode_lsp: `-P` keeps the working directory
--- (the workspace) off sys.path, so a checkout's `tunacode_lsp/` or `pygls/` is never imported.
---@return string[]
function M.default_cmd()
  local program = on_path('tunacode-lsp')
  if program then
    return { program }
  end
  return { 'python3', '-P', '-m', 'tunacode_lsp' }
end

---@return string
function M.root()
  return vim.fs.root(0, M.options.root_markers) or vim.fn.getcwd()
end

--- The vim.lsp.Config of the server (what setup() registers as vim.lsp.config.tunacode).
---@return vim.lsp.Config
function M.lsp_config()
  return {
    cmd = M.options.cmd or M.default_cmd(),
    root_markers = M.options.root_markers,
    init_options = object(M.options.settings),
    settings = { tunacode = object(M.options.settings) },
    capabilities = { experimental = { tunacode = { approve = true, saveDocuments = true, diagnostics = true } } },
    -- a `tunacode.request` Command from a code action (`TunaCode: Fix` / `Explain`) goes through
    -- :TunaAsk's path, so its answer streams into the answer buffer
    commands = {
      ['tunacode.request'] = function(cmd)
        local arg = cmd.arguments and cmd.arguments[1] or {}
        M.ask(arg.prompt, { context = arg.context })
      end,
    },
    handlers = {
      ['tunacode/diagnostics'] = diagnostics.handler,
      ['tunacode/approve'] = approve.handler,
      ['tunacode/saveDocuments'] = save.handler,
      ['workspace/applyEdit'] = save.apply_edit,
      ['$/cancelRequest'] = function()
        approve.on_cancel_request()
      end,
      ['tunacode/event'] = function(err, event, ctx)
        M.on_event(err, event, ctx)
      end,
      ['window/showMessage'] = function(_, params, ctx)
        M.on_show_message(params, ctx)
      end,
    },
  }
end

---@param opts table?
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  vim.lsp.config('tunacode', M.lsp_config())
  if M.options.keymaps then
    M.set_keymaps()
  end
end

local shown = {} ---@type table<integer, table<string, true>> per client: the messages shown
local key_ns = vim.api.nvim_create_namespace('tunacode.hold')

--- Hold the progress echo off (a warning is on the command line) until the next key typed.
function M.hold_echo()
  M.echo_held = true
  vim.on_key(function()
    M.echo_held = false
    vim.schedule(function()
      vim.on_key(nil, key_ns)
    end)
  end, key_ns)
end

--- window/showMessage: through vim.notify (no hit-enter prompt), each message once per server.
--- The server warns about a bad setting after initialize and again when it reads the
--- same settings through workspace/configuration.
function M.on_show_message(params, ctx)
  if type(params) ~= 'table' or type(params.message) ~= 'string' then
    return vim.NIL
  end
  local warning = type(params.type) == 'number' and params.type <= 2
  if warning then
    -- a warning or error (a bad setting) stays readable: the progress echo holds off until
    -- the user types something
    M.hold_echo()
  end
  local seen = shown[ctx.client_id] or {}
  shown[ctx.client_id] = seen
  local key = tostring(params.type) .. '\0' .. params.message
  if not seen[key] then
    seen[key] = true
    if warning and not M.one_line('TunaCode: ' .. params.message) then
      view.line('[note] ' .. params.message) -- a warning stays in the answer buffer too
    end
    local levels = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }
    notify(params.message, levels[params.type] or vim.log.levels.INFO)
  end
  return vim.NIL
end

--- Call fn(client) with the running TunaCode client for this workspace, starting it if needed;
--- on_fail(message) if it cannot start.
---@param fn fun(client: vim.lsp.Client)
---@param on_fail? fun(message: string)
function M.with_client(fn, on_fail)
  local function fail(message)
    notify(message, vim.log.levels.ERROR)
    if on_fail then
      on_fail(message)
    end
  end
  local config = vim.tbl_extend('force', M.lsp_config(), { name = 'tunacode', root_dir = M.root() })
  config.root_markers = nil
  local log_start = M.log_size()
  local client = M.running_client(config.root_dir)
  if not client then
    local id = vim.lsp.start(config, { attach = false, silent = true })
    client = id and vim.lsp.get_client_by_id(id)
  end
  if not client then
    fail(('cannot start the server (%s)'):format(table.concat(config.cmd, ' ')))
    return
  end
  M.follow_buffers(client)
  if client.initialized then
    if M.state.commands == nil then
      M.refresh_commands(client)
    end
    fn(client)
    return
  end
  -- Poll until initialized. The timer's callbacks are scheduled; while Neovim shows a
  -- hit-enter prompt (the server's warnings arrive right then) they queue up, so only the
  -- first one that sees the end may act: `done` guards the timer's single close.
  local waited, done, timer = 0, false, assert(vim.uv.new_timer())
  local function stop()
    done = true
    timer:stop()
    if not timer:is_closing() then
      timer:close()
    end
  end
  timer:start(20, 20, vim.schedule_wrap(function()
    if done then
      return
    end
    waited = waited + 20
    if client.initialized then
      stop()
      M.refresh_commands(client)
      fn(client)
    elseif client:is_stopped() or waited >= M.options.start_timeout then
      stop()
      fail(M.start_failure(config.cmd, log_start, client:is_stopped()))
    end
  end))
end

--- The running TunaCode client of this root: one the commands started, or one that
--- `vim.lsp.enable('tunacode')` started for a file (its root_dir may be unset when no root
--- marker was found; the server then works in Neovim's current directory).
---@param root string
---@return vim.lsp.Client?
function M.running_client(root)
  for _, client in ipairs(vim.lsp.get_clients({ name = 'tunacode' })) do
    local dir = client.config.root_dir
    if not client:is_stopped() and (dir == root or (dir == nil and root == vim.fn.getcwd())) then
      return client
    end
  end
  return nil
end

--- Whether a buffer is a file of the workspace under `root` (what the server should see).
---@param buf integer
---@param root string
---@return boolean
local function workspace_file(buf, root)
  if not vim.api.nvim_buf_is_loaded(buf) or vim.bo[buf].buftype ~= '' then
    return false
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' or name:find('^%a[%w+.-]*://') then
    return false
  end
  local path = vim.fs.normalize(vim.fn.fnamemodify(name, ':p'))
  local prefix = vim.fs.normalize(root)
  return path:sub(1, #prefix + 1) == prefix .. '/'
end

local following = {} ---@type table<integer, true> clients whose root's buffers are attached

--- Attach the workspace's loaded file buffers to the client, and the ones opened later, so
--- the server knows them (didOpen/didChange): its reads see unsaved text and its edits of
--- them go through the editor (workspace/applyEdit + tunacode/saveDocuments), which keeps
--- the buffer and the file in step (no stale buffer, no W12).
---@param client vim.lsp.Client
function M.follow_buffers(client)
  local root = client.config.root_dir or vim.fn.getcwd()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if workspace_file(buf, root) and not vim.lsp.buf_is_attached(buf, client.id) then
      vim.lsp.buf_attach_client(buf, client.id)
    end
  end
  if following[client.id] then
    return
  end
  following[client.id] = true
  local group = vim.api.nvim_create_augroup('tunacode_follow_' .. client.id, { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
    group = group,
    desc = 'Attach the workspace files to the TunaCode server',
    callback = function(ev)
      if client:is_stopped() then
        following[client.id] = nil
        pcall(vim.api.nvim_del_augroup_by_id, group)
        return true
      end
      if workspace_file(ev.buf, root) and not vim.lsp.buf_is_attached(ev.buf, client.id) then
        vim.lsp.buf_attach_client(ev.buf, client.id)
      end
    end,
  })
end

---@return integer bytes in the LSP log now (where a new server's stderr will start)
function M.log_size()
  local stat = vim.uv.fs_stat(vim.lsp.log.get_filename())
  return stat and stat.size or 0
end

local ESCAPES = { n = '\n', t = '\t', r = '\r', ['\\'] = '\\', ['"'] = '"', a = '\a', b = '\b', f = '\f', v = '\v' }

--- The text of a string literal as vim.inspect writes it (without its quotes), read
--- without running it as code.
---@param quoted string
---@return string
function M.unescape(quoted)
  local out, i = {}, 1
  while i <= #quoted do
    local c = quoted:sub(i, i)
    if c ~= '\\' then
      out[#out + 1], i = c, i + 1
    else
      local digits = quoted:match('^%d%d?%d?', i + 1)
      if digits then
        out[#out + 1], i = string.char(math.min(tonumber(digits), 255)), i + 1 + #digits
      else
        local e = quoted:sub(i + 1, i + 1)
        out[#out + 1], i = ESCAPES[e] or e, i + 2
      end
    end
  end
  return table.concat(out)
end

--- The last line the server printed to stderr since `from` (Neovim logs stderr into the LSP
--- log as `[ERROR] ... "rpc" "<cmd>" "stderr" "<chunk>"`), e.g. `No module named tunacode_lsp`.
---@param from integer byte offset in the LSP log
---@return string?
function M.stderr_tail(from)
  local file = io.open(vim.lsp.log.get_filename(), 'r')
  if not file then
    return nil
  end
  local size = file:seek('end')
  file:seek('set', math.max(from, size - 65536))
  local text = file:read('*a') or ''
  file:close()
  local last
  for quoted in text:gmatch('"stderr"\t"([^\n]*)"') do
    for _, line in ipairs(vim.split(M.unescape(quoted), '\n', { plain = true })) do
      if vim.trim(line) ~= '' then
        last = vim.trim(line)
      end
    end
  end
  return last
end

--- Why the server did not start, for the error message: its last stderr line when it exited.
---@param cmd string[]
---@param log_start integer
---@param exited boolean
---@return string
function M.start_failure(cmd, log_start, exited)
  local what = table.concat(cmd, ' ')
  if not exited then
    return ('the server (%s) did not initialize within %d ms; see :checkhealth tunacode'):format(what, M.options.start_timeout)
  end
  local cause = M.stderr_tail(log_start)
  if cause then
    return ('the server (%s) exited: %s'):format(what, cause)
  end
  return ('the server (%s) exited; see :checkhealth tunacode and %s'):format(what, vim.lsp.log.get_filename())
end

---@param client vim.lsp.Client
---@param name string
---@param args table
---@param handler fun(err: table?, result: any)
local function command(client, name, args, handler)
  client:request('workspace/executeCommand', { command = name, arguments = { object(args) } }, function(err, result)
    handler(err, result)
  end)
end

local function abort(client)
  local target = M.state.request_id and { requestId = M.state.request_id } or { sessionId = M.state.session_id }
  command(client, 'tunacode.abort', target, function(err)
    if err then
      notify('stop failed: ' .. err.message, vim.log.levels.WARN)
    end
  end)
end

local RUNNING = { pending = true, in_progress = true, awaiting_approval = true }
local check_pending = false

--- After a tool call ended: :checktime (scheduled, once for a burst of events; inside an
--- event handler Neovim would postpone it), so a clean buffer whose file a tool wrote (a shell
--- command, an edit the server wrote on disk) shows it at once instead of when Neovim next
--- regains focus.
function M.check_files()
  if check_pending then
    return
  end
  check_pending = true
  vim.schedule(function()
    check_pending = false
    pcall(vim.cmd.checktime)
  end)
end

local redraw_pending = false

--- Redraw every window's statusline (`redrawstatus!`, scheduled, once for a burst of events),
--- so a statusline showing `require('tunacode').statusline()` is never stale in another window.
function M.redraw_status()
  if redraw_pending then
    return
  end
  redraw_pending = true
  vim.schedule(function()
    redraw_pending = false
    pcall(vim.cmd, 'redrawstatus!')
  end)
end

--- A tool newly allowed for the whole session: a note in the answer buffer, the statusline.
approve.on_allow = function(tool)
  view.line(('[note] %s is allowed for the rest of this session: not asked again (:TunaAllows revoke ends it)'):format(tool))
  M.redraw_status()
end

--- :TunaAllows: list the tools allowed for the whole session; `revoke` ends them all,
--- `revoke {tool}` that one (`tunacode.session.allows`: the server asks again for a revoked
--- tool from its next call, also within a running request).
---@param args string '' | 'revoke' | 'revoke {tool}'
function M.allows(args)
  local words = vim.split(vim.trim(args or ''), '%s+', { trimempty = true })
  local allows = approve.session_allows
  if #words == 0 then
    notify(#allows > 0 and ('allowed for this session: ' .. table.concat(allows, ', ') .. ' (:TunaAllows revoke)')
      or 'no tool is allowed for the whole session')
    return
  end
  if words[1] ~= 'revoke' or #words > 2 then
    notify(':TunaAllows [revoke [tool]]', vim.log.levels.WARN)
    return
  end
  if words[2] and not vim.tbl_contains(allows, words[2]) then
    notify(words[2] .. ' is not allowed for the session', vim.log.levels.WARN)
    return
  end
  if #allows == 0 or not M.state.session_id then
    notify('no tool is allowed for the whole session')
    return
  end
  local client = M.running_client(M.root())
  local args_ = { sessionId = M.state.session_id }
  if words[2] then
    args_.revoke = { words[2] }
  else
    args_.revokeAll = true
  end
  local answer = client and client:request_sync('workspace/executeCommand',
    { command = 'tunacode.session.allows', arguments = { object(args_) } }, 5000)
  if not answer or answer.err or type(answer.result) ~= 'table' then
    local why = answer and answer.err and answer.err.message or (client and 'no answer within 5 s' or 'the server is not running')
    notify('revoking failed: ' .. why, vim.log.levels.WARN)
    return
  end
  local ended = words[2] or table.concat(allows, ', ')
  approve.session_allows = vim.tbl_filter(function(tool)
    return type(tool) == 'string'
  end, answer.result.allowed or {})
  local message = ('revoked: %s; asked again from its next call'):format(ended)
  view.line('[note] ' .. message)
  notify(message)
  M.redraw_status()
end

--- Handler of `tunacode/event`: the request we started streams into the answer buffer.
function M.on_event(_, event, ctx)
  if type(event) ~= 'table' then
    return
  end
  if event.type == 'request_start' and M.state.busy and not M.state.request_id then
    M.state.request_id = event.requestId
    M.state.last_request_id = event.requestId
    M.state.session_id = event.sessionId
    if M.state.stop_requested then
      local client = vim.lsp.get_client_by_id(ctx.client_id)
      if client then
        abort(client)
      end
    end
  end
  approve.on_event(event)
  if event.type == 'tool_call_update' and not RUNNING[event.status] then
    M.check_files()
  end
  if event.requestId == M.state.request_id then
    status.event(event)
    view.event(event)
    M.redraw_status()
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'TunaCodeEvent', modeline = false, data = event })
end

--- The `context` of a question about lines line1..line2 (1-based) of a buffer: the whole
--- buffer (`:%TunaAsk`) is a `file` item, a part of it a `selection` with its text; the
--- diagnostics on those lines follow as `diagnostic` items.
---@param buf integer
---@param line1 integer
---@param line2 integer
---@return table[]
function M.range_context(buf, line1, line2)
  local uri = vim.uri_from_bufnr(buf)
  local found = diagnostics.context(buf, line1, line2)
  if line1 == 1 and line2 == vim.api.nvim_buf_line_count(buf) then
    return { { type = 'file', uri = uri }, unpack(found) }
  end
  local lines = vim.api.nvim_buf_get_lines(buf, line1 - 1, line2, false)
  local last = lines[#lines] or ''
  return { {
    type = 'selection',
    uri = uri,
    range = {
      start = { line = line1 - 1, character = 0 },
      ['end'] = { line = line2 - 1, character = vim.str_utfindex(last, 'utf-16') },
    },
    text = table.concat(lines, '\n'),
  }, unpack(found) }
end

--- Send a prompt; the answer streams into the scratch buffer. Continues the current session.
--- opts.context: ContextItem[] sent with it (only when given).
---@param prompt string
---@param opts? {context?: table[]}
function M.ask(prompt, opts)
  if not prompt or vim.trim(prompt) == '' then
    notify('empty prompt', vim.log.levels.WARN)
    return
  end
  if M.state.busy then
    notify('a request is running; :TunaStop it first', vim.log.levels.WARN)
    return
  end
  local named, problems = require('tunacode.chat').context(prompt, M.range_context)
  if #problems > 0 then
    notify(table.concat(problems, '; '), vim.log.levels.WARN)
    return
  end
  if #named > 0 then -- #buffer, #selection, @file in the prompt
    opts = vim.tbl_extend('force', opts or {}, { context = vim.list_extend(vim.list_extend({}, opts and opts.context or {}), named) })
  end
  M.state.busy, M.state.request_id, M.state.stop_requested = true, nil, false
  filechanged.begin() -- a file a command rewrites under a buffer: no W12 question mid-answer
  view.show()
  view.start_request(prompt)
  M.with_client(function(client)
    local args = { prompt = prompt, sessionId = M.state.session_id }
    if opts and opts.context and #opts.context > 0 then
      args.context = opts.context
    end
    if M.state.mode == 'plan' then
      args.mode = 'plan'
    end
    command(client, 'tunacode.request', args, function(err, result)
      M.state.busy, M.state.request_id = false, nil
      filechanged.finish()
      M.state.commands = nil -- asked again at the next completion (a command file may have come)
      if err then
        view.error(err.message or vim.inspect(err))
        notify(err.message or 'request failed', vim.log.levels.ERROR)
      else
        M.state.session_id = result.sessionId
        M.state.last_result = result
        view.finish(result)
      end
      local next_prompt = M.state.next_prompt
      M.state.next_prompt = nil
      if next_prompt then
        M.ask(next_prompt)
      end
    end)
  end, function(message)
    M.state.busy = false
    filechanged.finish()
    view.error(message)
  end)
end

--- :TunaMode [agent|plan]: the mode of the next requests (none: say which it is).
---@param mode? string
function M.set_mode(mode)
  if mode == nil or mode == '' then
    notify('mode: ' .. M.state.mode)
    return
  end
  if mode ~= 'agent' and mode ~= 'plan' then
    notify('mode: agent or plan', vim.log.levels.WARN)
    return
  end
  M.state.mode = mode
  notify('mode: ' .. mode .. (mode == 'plan' and ' (read-only tools; the answer is a plan)' or ''))
end

--- Ask the server for the prompt commands (in the background) and keep them for completion.
---@param client table
function M.refresh_commands(client)
  command(client, 'tunacode.commands.list', {}, function(err, result)
    if not err and type(result) == 'table' and type(result.commands) == 'table' then
      M.state.commands = result.commands
    end
  end)
end

--- The prompt commands kept from the server (none yet: asked now, offered next time).
---@return table[]
function M.prompt_commands()
  if M.state.commands then
    return M.state.commands
  end
  local client = M.running_client(M.root())
  if client and client.initialized then
    M.refresh_commands(client)
  end
  return {}
end

--- Completion of :TunaAsk: `/` and part of a command's name -> the matching `/name`s.
---@param arglead string
---@param cmdline string
---@return string[]
function M.complete_ask(arglead, cmdline)
  local args = cmdline:match('^%S*TunaAsk%s+(.*)$') or ''
  if arglead:match('^[@#]') then -- @file, #buffer, #selection anywhere in the prompt
    return require('tunacode.chat').complete(arglead, {})
  end
  if args:sub(1, 1) ~= '/' or args:find('%s') or arglead ~= args then
    return {}
  end
  local typed = args:sub(2):lower()
  local found = {}
  for _, c in ipairs(M.prompt_commands()) do
    if type(c.name) == 'string' and c.name:lower():sub(1, #typed) == typed then
      table.insert(found, '/' .. c.name)
    end
  end
  table.sort(found)
  return found
end

--- :TunaSteer {text}: add `text` to the running request as a user message the model sees at
--- its next turn (tunacode.steer). When the request has no turn left (accepted: false), or
--- none runs, it is asked as the next question instead (:TunaAsk), once the request answers.
---@param text string
function M.steer(text)
  if not text or vim.trim(text) == '' then
    notify('empty text', vim.log.levels.WARN)
    return
  end
  if not M.state.busy then
    M.ask(text)
    return
  end
  local function later()
    if M.state.busy then
      M.state.next_prompt = M.state.next_prompt and (M.state.next_prompt .. '\n\n' .. text) or text
      notify('the request is finishing; this is asked next')
    else
      M.ask(text)
    end
  end
  if not (M.state.session_id and M.state.request_id) then
    later()
    return
  end
  M.with_client(function(client)
    command(client, 'tunacode.steer', { sessionId = M.state.session_id, text = text }, function(err, result)
      if not err and type(result) == 'table' and result.accepted == true then
        notify('sent; the model sees it at its next turn')
      else
        later()
      end
    end)
  end)
end

--- Abort the running request (through tunacode.abort); the session stays valid.
function M.stop()
  if not M.state.busy then
    notify('nothing is running')
    return
  end
  local client = vim.lsp.get_clients({ name = 'tunacode' })[1]
  if M.state.request_id == nil then
    M.state.stop_requested = true -- sent as soon as the request_start event names the request
    return
  end
  if client then
    abort(client)
  end
end

--- Forget the current session: the next :TunaAsk starts a new one.
function M.new()
  M.state.session_id = nil
  approve.session_allows = {} -- the server's allows belong to the session
  M.redraw_status()
  notify('the next question starts a new session')
end

--- Continue a stored session: its requests are shown in the answer buffer (the server's events).
---@param session_id string
function M.resume(session_id)
  M.with_client(function(client)
    command(client, 'tunacode.session.get', { sessionId = session_id, events = true }, function(err, result)
      if err then
        notify(err.message, vim.log.levels.ERROR)
        return
      end
      M.state.session_id = session_id
      view.show()
      view.transcript(result.session, result.events or {})
      notify('continuing session ' .. (result.session.title ~= '' and result.session.title or session_id))
    end)
  end)
end

---@param session table
function M.format_session(session)
  local title = (session.title and session.title ~= '') and session.title or '(untitled)'
  return ('%s  %s  %d messages'):format(title, (session.modifiedAt or ''):sub(1, 16), session.messageCount or 0)
end

--- Pick a session of this workspace with vim.ui.select and continue it.
function M.sessions()
  M.with_client(function(client)
    command(client, 'tunacode.session.list', {}, function(err, result)
      if err then
        notify(err.message, vim.log.levels.ERROR)
        return
      end
      local sessions = result.sessions or {}
      if #sessions == 0 then
        notify('no stored sessions for this workspace')
        return
      end
      vim.ui.select(sessions, { prompt = 'TunaCode session', format_item = M.format_session }, function(choice)
        if choice then
          M.resume(choice.sessionId)
        end
      end)
    end)
  end)
end

--- The statusline component: state, tokens, cost and context meter of the current or last
--- request ('' before the first); `vim.o.statusline = '%f %= %{v:lua.require"tunacode".statusline()} '`.
---@return string
function M.statusline()
  return status.render()
end

--- :TunaChanges: the files this session changed (tunacode.changes), as diffs in a scratch
--- buffer with filetype=diff.
function M.changes()
  if not M.state.session_id then
    notify('no session yet: ask something first')
    return
  end
  M.with_client(function(client)
    command(client, 'tunacode.changes', { sessionId = M.state.session_id }, function(err, result)
      if err then
        notify('changes: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        return
      end
      local buf = view.changes(result)
      local hunks = require('tunacode.hunks')
      local root = client.config.root_dir or M.root()
      hunks.attach(buf, root) -- ]x [x ga gr
      vim.fn.setqflist({}, ' ', { title = 'TunaCode changes', items = hunks.quickfix_items(result, root) })
      vim.cmd('tab sbuffer ' .. buf)
    end)
  end)
end

--- After a rewind: reload the restored files that are open. A clean buffer reloads by
--- itself (:checktime, autoread). A buffer with unsaved edits is reloaded only when the user
--- chose to overwrite (`forced`): `:edit!`, which keeps the old text for undo (`u`), instead of
--- Neovim's W12 question.
---@param restored string[] paths relative to the workspace root
---@param forced boolean
---@return string[] replaced the paths whose unsaved edits were replaced
function M.reload_restored(restored, forced)
  local replaced = {}
  local root = M.root()
  for _, path in ipairs(restored) do
    local file = path:sub(1, 1) == '/' and path or vim.fs.joinpath(root, path)
    local buf = diagnostics.loaded_buffer(vim.uri_from_fname(file))
    if forced and buf and vim.bo[buf].modified then
      local ok = pcall(vim.api.nvim_buf_call, buf, function()
        vim.cmd('silent edit!')
      end)
      if ok then
        table.insert(replaced, path)
      end
    end
  end
  vim.cmd('checktime')
  return replaced
end

--- The answer to tunacode.session.rewind: done, a conflict (-32004, files changed since the
--- agent's edit: offer to overwrite them), or another error.
---@param err table?
---@param result table?
---@param retry fun(force: boolean)
---@param forced? boolean this was the retry that overwrites
---@param label? string what was rewound ('the last request', 'to before request 2')
---@param after? fun() called once the rewind is done (:TunaEdit asks again)
function M.on_rewind(err, result, retry, forced, label, after)
  if err and err.code == -32004 then
    local choices = { 'Rewind anyway (overwrite them)', 'Keep everything' }
    vim.ui.select(choices, { prompt = 'TunaCode: ' .. (err.message or 'files changed since') .. ' ' }, function(choice)
      if choice == choices[1] then
        retry(true)
      end
    end)
    return
  elseif err then
    notify('rewind: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    return
  end
  local restored = result and result.restored
  local paths = type(restored) == 'table' and vim.tbl_filter(function(p)
    return type(p) == 'string'
  end, restored) or {}
  local count = type(restored) == 'table' and #restored or tonumber(restored) or 0
  M.state.last_request_id = nil
  local replaced = M.reload_restored(paths, forced == true)
  local message = ('rewound %s; %d file%s restored'):format(label or 'the last request', count, count == 1 and '' or 's')
  if #replaced > 0 then
    message = message .. ('; your unsaved edits in %s were replaced (u in the buffer brings them back)'):format(
      table.concat(replaced, ', '))
  end
  notify(message)
  if after then
    after()
  end
end

--- Confirm, then tunacode.session.rewind to before `request_id` (its messages and those of
--- every later request go, and the files they changed return).
local function confirm_rewind(session_id, request_id, label, question, after)
  local choices = { 'Rewind', 'Cancel' }
  vim.ui.select(choices, { prompt = question }, function(choice)
    if choice ~= 'Rewind' then
      return
    end
    local function send(force)
      M.with_client(function(client)
        local args = { sessionId = session_id, requestId = request_id, files = true, force = force }
        command(client, 'tunacode.session.rewind', args, function(err, result)
          M.on_rewind(err, result, send, force, label, after)
        end)
      end)
    end
    send(false)
  end)
end

--- The session's requests for the rewind picker, oldest first: `{number, request_id, label}`
--- from a tunacode.session.get result (`requests` and the prompt each one starts with).
---@param result table
---@return {number: integer, request_id: string, label: string}[]
function M.request_items(result)
  local items = {}
  local messages = type(result.messages) == 'table' and result.messages or {}
  for number, mark in ipairs(type(result.requests) == 'table' and result.requests or {}) do
    local message = messages[(tonumber(mark.firstMessage) or -1) + 1]
    local text = ''
    local content = type(message) == 'table' and message.content or nil
    if type(content) == 'string' then
      text = content
    elseif type(content) == 'table' then
      for _, block in ipairs(content) do
        if type(block) == 'table' and block.type == 'text' and type(block.text) == 'string' then
          text = block.text
        end
      end
    end
    local lines = vim.split(vim.trim(text), '\n', { plain = true })
    local line = (lines[#lines] or ''):gsub('%c', ' ') -- the prompt follows any editor context
    if type(mark.requestId) == 'string' then
      table.insert(items, {
        number = number,
        request_id = mark.requestId,
        label = ('%d. %s'):format(number, line:sub(1, 80)),
        prompt = vim.trim(text),
      })
    end
  end
  return items
end

--- :TunaRewind: undo the last request of this Neovim; :TunaRewind N: go back to before
--- request N of the session (1 the oldest); :TunaRewind!: pick the request from a list.
--- Each asks for a confirmation (tunacode.session.rewind).
--- With `opts.edit` (:TunaEdit), once the rewind is done the request's prompt is offered in
--- vim.ui.input to edit and send again (edit and resend).
---@param opts? {pick?: boolean, number?: integer, edit?: boolean}
function M.rewind(opts)
  opts = opts or {}
  local session_id, request_id = M.state.session_id, M.state.last_request_id
  if M.state.busy then
    notify('a request is running; :TunaStop it first', vim.log.levels.WARN)
    return
  end
  if not opts.pick and not opts.number then
    if not (session_id and request_id) then
      notify('nothing to rewind')
      return
    end
    confirm_rewind(session_id, request_id, 'the last request',
      'TunaCode: rewind the last request? Its messages go and the files it changed return: ')
    return
  elseif not session_id then
    notify('nothing to rewind')
    return
  end
  M.with_client(function(client)
    command(client, 'tunacode.session.get', { sessionId = session_id }, function(err, result)
      if err then
        notify('rewind: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        return
      end
      local items = M.request_items(result)
      local function chosen(item)
        if not item then
          return
        end
        local after = opts.edit and function()
          vim.ui.input({ prompt = 'TunaCode (edit and send): ', default = item.prompt }, function(text)
            if text and vim.trim(text) ~= '' then
              M.ask(text)
            end
          end)
        end or nil
        confirm_rewind(session_id, item.request_id, ('to before request %d'):format(item.number),
          ('TunaCode: go back to before request %d (%s)? It and every later request go, and the files they changed return: ')
            :format(item.number, (item.label:gsub('^%d+%. ', ''))), after)
      end
      if opts.number then
        if not items[opts.number] then
          notify(('no request %d in this session (it has %d)'):format(opts.number, #items), vim.log.levels.WARN)
          return
        end
        chosen(items[opts.number])
      elseif #items == 0 then
        notify('nothing to rewind')
      else
        vim.ui.select(items, {
          prompt = 'TunaCode: rewind to before which request? ',
          format_item = function(item)
            return item.label
          end,
        }, chosen)
      end
    end)
  end)
end

--- The lines :TunaStatus shows for a `tunacode.status` result, and the worst level in them.
---@param status table
---@return string[] lines
---@return integer level (vim.log.levels)
function M.status_lines(status)
  local lines = {
    ('TunaCode %s (protocol %s)'):format(tostring(status.version), tostring(status.protocolVersion)),
    'session store: ' .. tostring(status.sessionStore),
  }
  local active = type(status.activeRequests) == 'table' and #status.activeRequests or 0
  table.insert(lines, ('requests running: %d'):format(active))
  if type(status.sandbox) == 'table' then
    local sandbox = status.sandbox
    table.insert(lines, ('shell sandbox: %s, %s%s'):format(tostring(sandbox.mode), sandbox.active and 'active' or 'not active',
      type(sandbox.reason) == 'string' and (' (' .. sandbox.reason .. ')') or ''))
  end
  local report = require('tunacode.health').mcp_report(status.mcpServers)
  local level = vim.log.levels.INFO
  if #report == 0 then
    table.insert(lines, 'MCP servers: none')
  else
    table.insert(lines, 'MCP servers:')
    for _, item in ipairs(report) do
      table.insert(lines, '  ' .. item.text)
      if item.level == 'error' or item.level == 'warn' then
        level = vim.log.levels.WARN
      end
    end
  end
  return lines, level
end

--- :TunaStatus: the server's version, store, running requests, sandbox and MCP servers
--- (`tunacode.status`), in one notification (WARN when an MCP server failed or is not allowed).
---@param on_done? fun(status: table?) called with the result (nil on an error)
function M.status(on_done)
  M.with_client(function(client)
    command(client, 'tunacode.status', {}, function(err, result)
      if err then
        notify('status: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      else
        local lines, level = M.status_lines(result)
        vim.notify(table.concat(lines, '\n'), level)
      end
      if on_done then
        on_done(not err and result or nil)
      end
    end)
  end, function()
    if on_done then
      on_done(nil)
    end
  end)
end

--- LspProgress of our client -> a short line in the command line (no hit-enter prompt).
function M.on_progress(ev)
  if not M.options.progress then
    return
  end
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  local value = ev.data.params and ev.data.params.value
  if not client or client.name ~= 'tunacode' or type(value) ~= 'table' then
    return
  end
  if M.echo_held then
    return -- the server's warning is still on screen (until a key is typed)
  end
  -- the request's own progress is titled TunaCode: `TunaCode: end_turn`, not `TunaCode: TunaCode end_turn`
  local title = value.title ~= 'TunaCode' and value.title or ''
  local text = vim.trim(('TunaCode: %s %s'):format(title, value.message or ''):gsub('%s+', ' '))
  local width = math.max(vim.o.columns - 15, 20)
  if #text > width then
    text = text:sub(1, width - 3) .. '...'
  end
  vim.api.nvim_echo({ { text } }, false, {})
end

return M
