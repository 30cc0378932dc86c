-- The v2 client parts, run in a real headless Neovim by calling the plugin's handlers with the
-- payloads of /work/notes/v2-client-contract.md (for what the real server does not produce on
-- demand; nvim_checkpoint_driver.lua runs the real thing): the `tunacode/approve` float (keys,
-- queue, cancel), `workspace/applyEdit` + `tunacode/saveDocuments` (never the user's unsaved
-- buffers); `plan` and `compaction` events in the answer buffer and the statusline;
-- :TunaChanges' diff buffer; :TunaRewind's confirmation and conflict retry (the commands go to
-- the real server, for a session it does not know).
-- Writes what it saw as JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
local finish = H.start(results)

local tunacode = H.plugin()
local approve = require('tunacode.approve')

local wait = H.wait

local DIFF = table.concat({
  '--- a/calc.py',
  '+++ b/calc.py',
  '@@ -1,2 +1,2 @@',
  ' def add(a, b):',
  '-    return a - b',
  '+    return a + b',
}, '\n') .. '\n'

local function approval(tool_call_id, tool, detail_kind, detail)
  return {
    sessionId = 's1', requestId = 'r1', toolCallId = tool_call_id, tool = tool,
    summary = tool == 'bash' and detail or 'calc.py',  -- the server sends the tool_call event's summary
    detail = detail, detailKind = detail_kind, truncated = false,
  }
end

--- Run the handler as Neovim runs a server request: in a coroutine; returns a box for the result.
local function serve(params)
  local box = {}
  coroutine.wrap(function()
    box.result = approve.handler(nil, params, { method = 'tunacode/approve', client_id = 1 })
  end)()
  return box
end

local function float_win()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      return win
    end
  end
end

local function float_state()
  local win = assert(float_win(), 'no float')
  local config = vim.api.nvim_win_get_config(win)
  local buf = vim.api.nvim_win_get_buf(win)
  local title = config.title and table.concat(vim.tbl_map(function(c)
    return c[1]
  end, config.title)) or ''
  return {
    floating = config.relative ~= '',
    title = title,
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    filetype = vim.bo[buf].filetype,
    focused = vim.api.nvim_get_current_win() == win,
    footer = config.footer and table.concat(vim.tbl_map(function(c)
      return c[1]
    end, config.footer)) or '',
  }
end

local function press(keys)
  vim.api.nvim_feedkeys(vim.keycode(keys), 'x', false)
end

local function floats()
  return #vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_config(win).relative ~= ''
  end, vim.api.nvim_list_wins())
end

local function snippet(name)
  dofile(env.TUNA_SNIPPETS .. '/' .. name .. '.lua')
end

results.early_notices = {}
H.record_notices(results.early_notices)

--- 0. typing in insert mode while an approval arrives never answers it: the keys go through
--- Neovim's typeahead as a person's do (<Cmd> steps in between): the float opens after
--- "# total = " without taking focus, the rest of the text lands in the buffer, <Esc> only
--- leaves insert mode. In the float, q only closes it; :TunaApprove shows it again; g3 denies.
local typed
function _G.tuna_typing_arrives()
  typed = serve(approval('t0', 'bash', 'command', 'rm -rf ~'))
end
function _G.tuna_typing_typed()
  results.typing = { mode = vim.api.nvim_get_mode().mode, float = float_state() }
end
local function typing(continue)
  function _G.tuna_typing_escaped()
    results.typing.lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    results.typing.after_esc = { mode = vim.api.nvim_get_mode().mode, result = typed.result or vim.NIL,
                                 floats = floats() }
    vim.schedule(function()
      local ok, err = pcall(function()
        vim.api.nvim_set_current_win(float_win())
        press('q')
        results.typing.closed = { result = typed.result or vim.NIL, floats = floats() }
        vim.cmd('TunaApprove')
        results.typing.reshown = floats()
        press('g3')
        wait(2000, function()
          return typed.result ~= nil
        end, 'the typed-over answer')
        results.typing.result = typed.result
        vim.cmd('bwipeout!')
      end)
      if not ok then
        table.insert(results.errors, tostring(err))
      end
      continue()
    end)
  end
  vim.api.nvim_feedkeys(vim.keycode('i# total = <Cmd>lua tuna_typing_arrives()<CR>sum of items'
    .. '<Cmd>lua tuna_typing_typed()<CR><Esc><Cmd>lua tuna_typing_escaped()<CR>'), 't', false)
end

local function scenario()
  local editor_win = vim.api.nvim_get_current_win()
  -- the plugin snippets of docs/neovim.md
  snippet('plugin-setup')
  results.setup_settings = tunacode.options.settings
  snippet('statusline')
  results.lsp_statusline = vim.api.nvim_eval_statusline(vim.o.statusline, {}).str
  snippet('plugin-statusline')
  snippet('user-event')

  -- 1. an edit: the float shows the diff (filetype diff); g2 answers Allow for session
  local first = serve(approval('t1', 'edit_file', 'diff', DIFF))
  results.diff_float = float_state()
  press('g2')
  wait(2000, function()
    return first.result ~= nil
  end, 'the first answer')
  results.first = first.result
  results.session_allows = vim.deepcopy(approve.session_allows)
  local notices = {}
  local notify = vim.notify
  vim.notify = function(message)
    table.insert(notices, message)
  end
  vim.cmd('TunaApprove') -- nothing pending: it lists the session-wide allows
  vim.notify = notify
  results.allows_notice = notices
  results.after_first = { floats = floats(), back = vim.api.nvim_get_current_win() == editor_win }

  -- 2. two at once: one float at a time; g1 answers the first, g3 denies the second
  local second = serve(approval('t2', 'bash', 'command', 'npm test -- --watch=false'))
  local third = serve(approval('t3', 'bash', 'command', 'rm -rf build'))
  results.queued = { floats = floats(), float = float_state() }
  press('g1')
  wait(2000, function()
    return second.result ~= nil
  end, 'the second answer')
  results.next_float = float_state()
  press('g3')
  wait(2000, function()
    return third.result ~= nil
  end, 'the third answer')
  results.second, results.third = second.result, third.result

  -- 3. the server gives up: $/cancelRequest closes the float; so does the tool call ending
  local cancelled = serve(approval('t4', 'bash', 'command', 'sleep 100'))
  results.cancel_floats = floats()
  local client_config = tunacode.lsp_config()
  client_config.handlers['$/cancelRequest'](nil, { id = 7 }, { method = '$/cancelRequest', client_id = 1 })
  wait(2000, function()
    return cancelled.result ~= nil
  end, 'the cancelled answer')
  results.cancelled = { result = cancelled.result, floats = floats() }
  local ended = serve(approval('t5', 'write_file', 'diff', DIFF))
  local other = serve(approval('t6', 'bash', 'command', 'ls'))
  tunacode.on_event(nil, { type = 'tool_call_update', requestId = 'r1', toolCallId = 't5', status = 'cancelled' },
    { client_id = 1 })
  wait(2000, function()
    return ended.result ~= nil
  end, 'the ended answer')
  results.ended = { result = ended.result, other = other.result or vim.NIL, float = float_state() }
  tunacode.on_event(nil, { type = 'request_end', requestId = 'r1', stopReason = 'cancelled' }, { client_id = 1 })
  wait(2000, function()
    return other.result ~= nil
  end, 'the request end to close the last float')
  results.other = { result = other.result, floats = floats() }
  local quit = serve(approval('t7', 'bash', 'command', 'make'))
  vim.api.nvim_win_close(float_win(), true) -- closing the float some other way does not answer
  results.quit_pending = { result = quit.result or vim.NIL, floats = floats() }
  vim.cmd('TunaApprove deny')
  wait(2000, function()
    return quit.result ~= nil
  end, 'the answer of the closed float')
  results.quit = { result = quit.result, floats = floats() }
  results.capabilities = client_config.capabilities
  results.handlers = vim.tbl_keys(client_config.handlers)

  -- 4. the agent's edit through the plugin's workspace/applyEdit handler, then
  -- saveDocuments: the clean calc.py is written (buffer = disk, :checktime quiet); the user's
  -- unsaved edits are never written, even when a (buggy) server lists their buffers: notes.txt
  -- (not edited by the agent) and mine.py (edited by the agent on top of the user's edit)
  vim.cmd('edit calc.py')
  local buf = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(buf)
  local handlers = tunacode.lsp_config().handlers
  local function agent_edit(target, line, from, to, text)
    return handlers['workspace/applyEdit'](nil, { label = 'TunaCode', edit = { documentChanges = { {
      textDocument = { uri = target, version = vim.NIL },
      edits = { { range = { start = { line = line, character = from }, ['end'] = { line = line, character = to } },
        newText = text } },
    } } } }, { client_id = 1 })
  end
  results.applied = agent_edit(uri, 1, 13, 14, '+')
  vim.cmd('edit notes.txt')
  local notes = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(notes, -1, -1, false, { 'half-written thought' }) -- the user's unsaved edit
  vim.cmd('edit mine.py')
  local mine = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(mine, -1, -1, false, { '# my note' }) -- the user's unsaved edit
  results.applied_mine = agent_edit(vim.uri_from_bufnr(mine), 0, 0, 1, 'Y')
  vim.cmd('buffer ' .. buf)
  local missing = vim.uri_from_fname(vim.fn.getcwd() .. '/not-open.py')
  local save = handlers['tunacode/saveDocuments']
  results.saved = save(nil, { uris = { uri, missing, vim.uri_from_bufnr(notes), vim.uri_from_bufnr(mine) } },
    { client_id = 1 }).saved
  results.calc_uri = uri
  results.modified = vim.bo[buf].modified
  results.kept_unsaved = { notes = vim.bo[notes].modified, mine = vim.bo[mine].modified,
    mine_lines = vim.api.nvim_buf_get_lines(mine, 0, -1, false) }
  vim.v.warningmsg = ''
  vim.cmd('checktime')
  results.warning = vim.v.warningmsg
  results.buffer = vim.api.nvim_buf_get_lines(buf, 0, -1, false)

  -- tunacode/diagnostics: what Neovim knows of each loaded file, from any source
  vim.diagnostic.set(vim.api.nvim_create_namespace('test-linter'), buf, {
    { lnum = 1, col = 4, end_lnum = 1, end_col = 10, message = 'use sum()', severity = vim.diagnostic.severity.HINT,
      source = 'linter' },
  })
  local diagnostics = tunacode.lsp_config().handlers['tunacode/diagnostics']
  results.diagnostics = diagnostics(nil, { uris = { uri, missing } }, { client_id = 1 })

  -- 5. a request with a plan, a compaction and usage: the answer buffer and the statusline
  local view = require('tunacode.view')
  results.statusline_before = tunacode.statusline()
  tunacode.state.busy = true
  local function event(e)
    e.requestId, e.sessionId = e.requestId or 'r9', 's9'
    tunacode.on_event(nil, e, { client_id = 1 })
  end
  view.start_request('Fix the add function')
  event({ type = 'request_start', prompt = 'Fix the add function', model = 'm' })
  event({ type = 'plan', items = {
    { content = 'Read calc.py', status = 'in_progress', activeForm = 'Reading calc.py' },
    { content = 'Fix add', status = 'pending', activeForm = 'Fixing add' },
  } })
  event({ type = 'text_delta', text = 'Looking at it.' })
  event({ type = 'tool_call', toolCallId = 'c1', name = 'bash', args = { command = 'pytest' }, status = 'pending',
    summary = 'pytest -q', kind = 'execute', title = 'Run pytest -q' })
  results.statusline_tool = tunacode.statusline()
  event({ type = 'tool_call_update', toolCallId = 'c1', name = 'bash', status = 'completed', durationMs = 12,
    result = '1 passed\n[exit code 0]', exitCode = 0 })
  event({ type = 'turn_end', turn = 1, usage = { totalTokens = 1200, cost = 0.01 }, contextTokens = 45000,
    contextWindow = 100000 })
  results.statusline_turn = tunacode.statusline()
  event({ type = 'plan', items = {
    { content = 'Read calc.py', status = 'completed', activeForm = 'Reading calc.py' },
    { content = 'Fix add', status = 'in_progress', activeForm = 'Fixing add' },
    { content = 'Run the tests', status = 'pending', activeForm = 'Running the tests' },
  } })
  event({ type = 'compaction', before = 90000, after = 30000 })
  event({ type = 'request_end', stopReason = 'end_turn', usage = { totalTokens = 2500, cost = 0.02 } })
  tunacode.state.busy = false
  results.rich_lines = view.lines()
  results.statusline_end = tunacode.statusline()
  results.evaluated_statusline = vim.api.nvim_eval_statusline(vim.o.statusline, {}).str
  vim.cmd('tab sbuffer ' .. view.buffer()) -- opened by hand: its output blocks fold there too
  results.hand_opened = { foldmethod = vim.wo.foldmethod, fold = vim.fn.foldlevel(vim.fn.search('^```output$', 'w')) }
  vim.cmd('tabclose')
  results.other_request_ignored = (function()
    event({ type = 'plan', requestId = 'other', items = { { content = 'x', status = 'pending' } } })
    return #view.lines() == #results.rich_lines
  end)()

  -- stderr lines from the LSP log are read as text, not run as code
  results.unescaped = {}
  for _, text in ipairs({ 'a\\123"b\nc\1x', 'No module named tunacode_lsp\n', '"); os.exit(1) --' }) do
    table.insert(results.unescaped, tunacode.unescape(vim.inspect(text):sub(2, -2)) == text)
  end

  -- 6. :TunaChanges' buffer
  local changes = view.changes({ files = {
    { path = 'calc.py', status = 'modified', diff = DIFF },
    { path = 'notes.md', status = 'added', diff = '--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1 @@\n+hi\n' },
  }, truncated = true })
  results.changes = { lines = vim.api.nvim_buf_get_lines(changes, 0, -1, false), filetype = vim.bo[changes].filetype,
    name = vim.api.nvim_buf_get_name(changes) }

  -- 7. :TunaChanges and :TunaRewind against the real server (which does not have them yet)
  local notices = {}
  vim.notify = function(message)
    table.insert(notices, message)
  end
  H.setup()
  vim.cmd('TunaChanges')
  wait(20000, function()
    return #notices > 0
  end, 'the answer to tunacode.changes')
  local prompts = {}
  local pick = {}
  vim.ui.select = function(items, opts, on_choice)
    table.insert(prompts, { prompt = opts.prompt, items = items })
    on_choice(items[pick[#prompts] or 1])
  end
  pick = { 2 } -- Cancel: nothing is sent
  vim.cmd('TunaRewind')
  pick = { 2, 1 }
  vim.cmd('TunaRewind') -- Rewind: sent
  wait(20000, function()
    return #notices > 1
  end, 'the answer to tunacode.session.rewind')
  local retried
  pick = { 2, 1, 1 }
  tunacode.on_rewind({ code = -32004, message = 'calc.py changed since the agent edited it' }, nil, function(force)
    retried = force
  end)
  tunacode.on_rewind(nil, { restored = { 'calc.py' } }, function() end)
  results.commands = { notices = notices, prompts = prompts, retried = retried,
    last_request_id = tunacode.state.last_request_id or vim.NIL }
end

-- scheduled out of the VimEnter callback: autocommands (WinClosed of a float closed with :quit)
-- do not fire inside another autocommand's callback, but do when a person types the command
vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.schedule(function()
      typing(function()
        local ok, err = pcall(scenario)
        if not ok then
          table.insert(results.errors, tostring(err))
        end
        finish(0)
      end)
    end)
  end,
})
