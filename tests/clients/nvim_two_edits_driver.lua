-- Only Neovim's built-in LSP client: calc.py is open with the user's unsaved line, and the
-- agent makes two edit_file calls in a row, the second matching only text the first produced.
-- Neovim answers workspace/applyEdit at once but sends its didChange debounced (150 ms), and
-- drops, while answering `applied: true`, an edit versioned older than the buffer. What the
-- buffer holds at the end goes to TUNA_OUT as JSON. TUNA_DROP_EDITS: a client that answers
-- `applied` and drops every edit.

local env = vim.env
local results = { errors = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)
local wait = H.wait

local function scenario()
  local ended
  local handlers = {
    ['tunacode/event'] = function(_, event)
      if event.type == 'request_end' then
        ended = event
      end
    end,
  }
  if env.TUNA_DROP_EDITS then -- a client that answers `applied` and drops the edit
    handlers['workspace/applyEdit'] = function()
      return { applied = true }
    end
  end
  vim.lsp.config('tunacode', {
    cmd = { env.TUNA_PYTHON, '-m', 'tunacode_lsp' },
    init_options = { model = 'openai-compatible:scripted', baseUrl = env.TUNA_MODEL_URL, approval = 'auto' },
    handlers = handlers,
  })
  vim.lsp.enable('tunacode')
  vim.cmd('edit ' .. vim.fn.fnameescape(vim.fn.fnamemodify('calc.py', ':p')))
  local calc = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(calc, -1, -1, false, { '# mine, unsaved' })
  local client
  wait(20000, function()
    client = vim.lsp.get_clients({ name = 'tunacode', bufnr = calc })[1]
    return client ~= nil and client.initialized and vim.lsp.buf_is_attached(calc, client.id)
  end, 'the server to start and attach calc.py')
  client:exec_cmd({ title = 'Ask', command = 'tunacode.request', arguments = { { prompt = 'Fix add twice' } } }, {},
    function() end)
  wait(60000, function()
    return ended ~= nil
  end, 'the request to end')
  results.result = ended
  -- let a pending didChange go out before looking (the buffer is what counts)
  vim.wait(300, function() return false end)
  results.buffer = vim.api.nvim_buf_get_lines(calc, 0, -1, false)
  results.modified = vim.bo[calc].modified
end

H.run(scenario)
