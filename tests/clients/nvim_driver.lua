-- Drives a real headless Neovim through the TunaCode plugin and writes what it saw as JSON.
-- Started by test_neovim.py: nvim --headless --clean -u nvim_driver.lua, settings in TUNA_* vars.
-- A watchdog writes the results and exits with 3 if anything hangs.

local env = vim.env
local results = { errors = {}, approvals = {}, progress = {}, events = {}, model_url = env.TUNA_MODEL_URL }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

local tunacode = H.plugin()
local view = require('tunacode.view')
local function setup()
  H.setup({ approval = 'ask' })
end

-- The built-in window/showMessageRequest handler asks through vim.ui.select; so does :TunaSessions.
vim.ui.select = function(items, opts, on_choice)
  if opts.kind == 'lsp_message' then
    local titles = vim.tbl_map(function(item)
      return item.title
    end, items)
    table.insert(results.approvals, { prompt = opts.prompt, actions = titles })
    for _, item in ipairs(items) do
      if item.title == 'Allow' then
        return on_choice(item)
      end
    end
    return on_choice(nil)
  end
  results.session_choices = vim.tbl_map(opts.format_item, items)
  on_choice(items[1])
end

-- The server asks this plugin with tunacode/approve (advertised): its float opens; the driver
-- reads what it shows and presses `g1` (the float's own mapping), as a user would.
local approve = require('tunacode.approve')
local float_timer = assert(vim.uv.new_timer())
float_timer:start(20, 20, vim.schedule_wrap(function()
  local current = approve.current
  if current and current.buf and not current.recorded and vim.api.nvim_buf_is_valid(current.buf) then
    current.recorded = true
    local p = current.params
    local shown = table.concat(vim.api.nvim_buf_get_lines(current.buf, 0, -1, false), '\n')
    table.insert(results.approvals, {
      prompt = (p.summary or '') .. ' (' .. (p.tool or '') .. ')\n' .. shown,
      actions = { 'Allow', 'Allow for this session', 'Deny' },
    })
    for _, map in ipairs(vim.api.nvim_buf_get_keymap(current.buf, 'n')) do
      if map.lhs == 'g1' and map.callback then
        map.callback()
      end
    end
  end
end))

vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev)
    table.insert(results.progress, ev.data.params.value)
  end,
})
vim.api.nvim_create_autocmd('User', {
  pattern = 'TunaCodeEvent',
  callback = function(ev)
    table.insert(results.events, ev.data.type)
  end,
})

local wait = H.wait

local function buffer_text()
  return table.concat(view.lines(), '\n')
end

results.notices = {}
results.echoed = {}
local echo = vim.api.nvim_echo
vim.api.nvim_echo = function(chunks, history, opts)
  table.insert(results.echoed, table.concat(vim.tbl_map(function(chunk)
    return chunk[1]
  end, chunks)))
  return echo(chunks, history, opts)
end
H.record_notices(results.notices)

local function scenario()
  -- 0. bad input is refused with a message, nothing is sent
  tunacode.ask('   ')
  vim.cmd('TunaStop')
  tunacode.setup({ cmd = { '/nonexistent/tunacode-lsp' } })
  vim.cmd('TunaAsk hello?')
  results.idle = { busy = tunacode.state.busy, notices = vim.deepcopy(results.notices), lines = view.lines() }
  results.health_missing = H.checkhealth()
  -- a server command that starts but exits at once: the message names the cause from its stderr
  tunacode.setup({ cmd = { env.TUNA_PYTHON, '-m', 'tunacode_lsp_missing' } })
  vim.cmd('TunaAsk hello?')
  wait(15000, function()
    return not tunacode.state.busy
  end, 'the missing server to fail')
  results.missing = { notice = results.notices[#results.notices], lines = view.lines() }
  setup()

  -- 1. a question whose answer writes a file after an approval
  vim.cmd('TunaAsk Create the greeting file')
  wait(30000, function()
    return not tunacode.state.busy
  end, 'the first answer')
  results.first = { result = tunacode.state.last_result, lines = view.lines() }
  local win = vim.fn.bufwinid(view.buffer())
  vim.api.nvim_win_call(win, function()
    results.first.foldlevels = vim.tbl_map(vim.fn.foldlevel, vim.fn.range(1, vim.fn.line('$')))
    local at = vim.fn.search('^```output$', 'w') + 1
    vim.api.nvim_win_set_cursor(0, { at, 0 })
    vim.cmd('normal! zc')
    results.first.closed_fold = { vim.fn.foldclosed(at), vim.fn.foldclosedend(at) }
    vim.cmd('normal! zR')
  end)
  local long_output = {}
  for n = 1, 30 do
    table.insert(long_output, 'line ' .. n)
  end
  results.command_output = {}
  for _, text in ipairs({ table.concat(long_output, '\n') .. '\n[exit code 0]', 'partial\n…' }) do
    local lines, cut = view.command_output(text)
    table.insert(results.command_output, { lines = lines, cut = cut })
  end
  results.status = vim.lsp.status()

  -- 2. a slow answer, stopped with :TunaStop once its first words are in the buffer
  vim.cmd('TunaAsk Tell me a long story')
  wait(30000, function()
    return tunacode.state.request_id ~= nil and buffer_text():find('word word') ~= nil
  end, 'the first words of the story')
  vim.cmd('TunaStop')
  wait(15000, function()
    return not tunacode.state.busy
  end, 'the stopped request to answer')
  results.second = { result = tunacode.state.last_result, lines = view.lines() }

  -- 3. a new session, then :TunaSessions picks the stored one back
  tunacode.new()
  vim.cmd('TunaSessions')
  wait(15000, function()
    return tunacode.state.session_id ~= nil and buffer_text():find('^# ') ~= nil
  end, 'the picked session')
  results.resumed = { session_id = tunacode.state.session_id, lines = view.lines() }
  -- 4. a range goes along as a selection, the whole buffer as the file, no range as nothing
  vim.cmd('edit calc.py')
  vim.diagnostic.set(vim.api.nvim_create_namespace('test-linter'), 0, { {
    lnum = 1, col = 11, end_lnum = 1, end_col = 16, message = 'add() subtracts',
    severity = vim.diagnostic.severity.ERROR, source = 'linter', code = 'E1',
  } })
  local client = vim.lsp.get_clients({ name = 'tunacode' })[1]
  local request = client.request
  results.sent = {}
  client.request = function(self, method, params, ...)
    if method == 'workspace/executeCommand' and params.command == 'tunacode.request' then
      table.insert(results.sent, params.arguments[1])
    end
    return request(self, method, params, ...)
  end
  for _, ask in ipairs({ '2,3TunaAsk Explain these lines', '%TunaAsk Review the file', 'TunaAsk Thanks' }) do
    vim.cmd(ask)
    wait(15000, function()
      return not tunacode.state.busy
    end, ask)
  end
  results.context_answer = tunacode.state.last_result
  -- a code action's `tunacode.request` Command (the server offers TunaCode: Fix) streams here too
  client:exec_cmd({ title = 'TunaCode: Fix', command = 'tunacode.request',
    arguments = { { prompt = 'Fix the diagnostic', context = { { type = 'file', uri = vim.uri_from_bufnr(0) } } } } })
  wait(15000, function()
    return tunacode.state.last_result ~= results.context_answer and not tunacode.state.busy
  end, 'the code action request')
  results.code_action = { result = tunacode.state.last_result, lines = view.lines() }
  client.request = nil
  results.calc_uri = vim.uri_from_bufnr(0)
  results.health_running = H.checkhealth()
  tunacode.setup({ cmd = { env.TUNA_PYTHON, '-m', 'tunacode_lsp' }, settings = { model = 'openai:gpt-4.1' } })
  vim.lsp.stop_client(vim.lsp.get_clients({ name = 'tunacode' }), true)
  wait(5000, function()
    return #vim.lsp.get_clients({ name = 'tunacode' }) == 0
  end, 'the server to stop')
  results.health_stopped = H.checkhealth()
end

H.run(scenario, { immediate = true })
