-- Only Neovim's built-in LSP client (no plugin), the real server, the scripted model:
-- 1. calc.py is open and clean, other.py open with an unsaved change: the agent reads
--    other.py (it must see the unsaved text) and edits calc.py (a plain client gets the file
--    written; autoread reloads the clean buffer at the :checktime of the docs' plain-reload
--    snippet, TUNA_RELOAD_LUA, when the tool call ends; no FileChangedShell);
-- 2. the user makes an unsaved edit in calc.py: the agent reads calc.py (sees it) and edits
--    it (applyEdit only: both edits in the buffer, the disk untouched, nothing asked), then
--    the user's :write has nothing to warn about;
-- 3. vim.lsp.buf.code_action() on lines 1-2 lists the server's actions; picking
--    `TunaCode: Explain` starts a request with the selection as context.
-- Writes what it saw as JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {}, shell_events = {}, events = {}, notices = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

H.record_notices(results.notices)
H.record_shell_events(results.shell_events)

local wait = H.wait

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- The buffer now, then :checktime (as Neovim does when it regains focus) and what it did.
local function state(buf, path)
  local before = lines(buf)
  local seen = H.checktime(buf, path, results.shell_events)
  seen.before_checktime = before
  return seen
end

local ended = {}

local function ask(client, prompt)
  local done
  client:exec_cmd({ title = 'Ask', command = 'tunacode.request', arguments = { { prompt = prompt } } }, {},
    function(err, result)
      done = { err = err, result = result }
    end)
  wait(60000, function()
    return done ~= nil
  end, 'the answer to ' .. prompt)
  if done.err then
    error('tunacode.request failed: ' .. vim.inspect(done.err))
  end
  return done.result
end

local function scenario()
  vim.lsp.config('tunacode', {
    cmd = { env.TUNA_PYTHON, '-m', 'tunacode_lsp' },
    init_options = { model = 'openai-compatible:scripted', baseUrl = env.TUNA_MODEL_URL, approval = 'auto' },
    handlers = {
      ['tunacode/event'] = function(_, event)
        table.insert(results.events, event.type)
        if event.type == 'request_end' then
          table.insert(ended, event)
        end
      end,
    },
  })
  vim.lsp.enable('tunacode')
  dofile(env.TUNA_RELOAD_LUA) -- the docs' snippet: :checktime when a tool call ends
  local calc_path = vim.fn.fnamemodify('calc.py', ':p')
  local other_path = vim.fn.fnamemodify('other.py', ':p')
  vim.cmd('edit ' .. vim.fn.fnameescape(other_path))
  local other = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(other, -1, -1, false, { '# unsaved in other.py' })
  vim.cmd('edit ' .. vim.fn.fnameescape(calc_path))
  local calc = vim.api.nvim_get_current_buf()
  local client
  wait(20000, function()
    client = vim.lsp.get_clients({ name = 'tunacode', bufnr = calc })[1]
    return client ~= nil and client.initialized and vim.lsp.buf_is_attached(other, client.id)
  end, 'the server to start and attach both files')
  results.capabilities = client.config.capabilities and client.config.capabilities.experimental or vim.NIL

  -- 1. read the other file's unsaved text, edit the clean calc.py
  results.first = ask(client, 'Fix add')
  results.calc_after_first = state(calc, calc_path)
  results.other_after_first = state(other, other_path)

  -- 2. the user's unsaved edit in calc.py, then the agent reads and edits calc.py
  vim.api.nvim_buf_set_lines(calc, -1, -1, false, { '# mine, unsaved' })
  results.second = ask(client, 'Look again')
  results.calc_after_second = state(calc, calc_path)
  results.undo = vim.fn.undotree(calc).seq_last
  vim.api.nvim_buf_call(calc, function()
    vim.cmd('write')
  end)
  results.calc_saved = state(calc, calc_path)

  -- 3. the code-action menu of the built-in client, on lines 1-2 of calc.py
  local menu = H.pick_code_action('TunaCode: Explain')
  local before = #ended
  vim.api.nvim_set_current_buf(calc)
  -- as a charwise Visual selection of lines 1-2 gives it (Neovim's end column is inclusive)
  local second_line = vim.api.nvim_buf_get_lines(calc, 1, 2, true)[1]
  vim.lsp.buf.code_action({ range = { start = { 1, 0 }, ['end'] = { 2, #second_line - 1 } } })
  wait(30000, function()
    return #ended > before
  end, 'the request of the code action')
  results.offered = menu.offered
  results.code_action_end = ended[#ended]
end

H.run(scenario)
