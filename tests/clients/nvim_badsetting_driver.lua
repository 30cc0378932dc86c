-- A bad setting (approval = 'sometimes') in a real headless Neovim with the plugin: the
-- server warns with window/showMessage while the plugin waits for it to initialize.
-- A person sees that warning behind a hit-enter prompt, during which Neovim runs only fast
-- events (libuv timers) and queues the rest; the driver stands in for that prompt by
-- blocking the same way (vim.wait fast_only) in both the built-in showMessage handler and
-- vim.notify. Writes what it saw as JSON to TUNA_OUT: the warnings shown, how often the
-- with_client callback ran, and every error message Neovim printed.

local env = vim.env
local results = { errors = {}, shown = {}, calls = 0 }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

local tunacode = H.plugin()

local function hit_enter_prompt()
  vim.wait(300, function()
    return false
  end, 10, true)
end

vim.notify = function(message)
  table.insert(results.shown, message)
  hit_enter_prompt()
end
local builtin = vim.lsp.handlers['window/showMessage']
vim.lsp.handlers['window/showMessage'] = function(err, params, ctx)
  table.insert(results.shown, params.message)
  hit_enter_prompt()
  return builtin(err, params, ctx)
end

local function scenario()
  H.setup({ approval = 'sometimes' })
  tunacode.with_client(function()
    results.calls = results.calls + 1
  end)
  assert(vim.wait(20000, function()
    return results.calls > 0
  end, 10), 'the client did not start')
  -- time for queued callbacks and a second warning (workspace/configuration) to show
  local client = vim.lsp.get_clients({ name = 'tunacode' })[1]
  local status
  client:exec_cmd({ title = 'status', command = 'tunacode.status', arguments = { vim.empty_dict() } }, {}, function(_, r)
    status = r or {}
  end)
  assert(vim.wait(20000, function()
    return status ~= nil
  end, 10), 'no tunacode.status answer')
  vim.wait(300, function()
    return false
  end, 10)
  -- the progress echo does not overwrite the warning right after it
  local echoed = {}
  local echo = vim.api.nvim_echo
  vim.api.nvim_echo = function(chunks, ...)
    table.insert(echoed, chunks[1] and chunks[1][1] or '')
    return echo(chunks, ...)
  end
  local function progress()
    tunacode.on_progress({ data = { client_id = client.id, params = { token = 't',
      value = { kind = 'report', title = 'TunaCode', message = 'running' } } } })
  end
  progress()
  results.echoed = vim.deepcopy(echoed)
  vim.api.nvim_feedkeys(vim.keycode('<C-l>'), 'xt', false) -- the user types: the echo may go on
  vim.wait(50, function()
    return not tunacode.echo_held
  end, 10)
  progress()
  vim.api.nvim_echo = echo
  results.echoed_after_key = echoed
  results.answer = require('tunacode.view').lines()
  results.messages = vim.fn.execute('messages')
  results.errmsg = vim.v.errmsg
end

H.run(scenario, { immediate = true })
