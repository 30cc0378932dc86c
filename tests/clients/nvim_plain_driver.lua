-- Runs the plain-LSP snippets of docs/neovim.md (no plugin) in a real headless Neovim.
-- TUNA_CONFIG_LUA, TUNA_ASK_LUA, TUNA_STOP_LUA and TUNA_OTHER_LUA are the snippets' files,
-- run as they are (tunacode-lsp is on PATH, check.py is the file Neovim opened). The ask
-- snippet runs right after the config one: it must wait for the server itself. The second
-- ask is a slow answer that the stop snippet ends. The scripted model is set through the
-- client's `settings` (workspace/configuration beats initializationOptions), which the
-- snippet leaves alone. Writes what it saw as JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {}, notices = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

H.record_notices(results.notices)

local function scenario()
  vim.lsp.config('*', {
    settings = { tunacode = { model = 'openai-compatible:scripted', baseUrl = env.TUNA_MODEL_URL } },
  })
  dofile(env.TUNA_CONFIG_LUA) -- vim.lsp.enable starts the server for check.py
  dofile(env.TUNA_ASK_LUA) -- at once: the snippet waits for the server
  results.attached = #vim.lsp.get_clients({ name = 'tunacode', bufnr = 0 })
  assert(vim.wait(20000, function()
    return #results.notices > 0
  end, 10), 'no answer to tunacode.request')
  results.answer = vim.g.tunacode_answer
  results.session = vim.g.tunacode_session

  -- a second question whose answer is slow: the stop snippet ends it while it runs
  vim.g.tunacode_answer, vim.g.tunacode_session = nil, nil
  dofile(env.TUNA_ASK_LUA)
  assert(vim.wait(20000, function()
    return vim.g.tunacode_session ~= nil and (vim.g.tunacode_answer or ''):find('word word') ~= nil
  end, 10), 'the slow answer did not start')
  results.running_session = vim.g.tunacode_session -- from request_start, before any result
  dofile(env.TUNA_STOP_LUA)
  assert(vim.wait(20000, function()
    return #results.notices > 1
  end, 10), 'no answer to the stopped request')

  -- the other commands print with vim.print
  local printed = {}
  vim.print = function(value)
    table.insert(printed, value)
  end
  dofile(env.TUNA_OTHER_LUA)
  assert(vim.wait(20000, function()
    return #printed == 2
  end, 10), 'tunacode.session.list and tunacode.status did not answer')
  results.printed = printed
end

H.run(scenario, { immediate = true })
