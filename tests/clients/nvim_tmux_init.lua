-- init.lua of the terminal test (test_neovim_tmux.py): the plugin with a bad setting in a real
-- Neovim in tmux. Starts the server at VimEnter; once tunacode.status answers (the server has
-- read the settings twice by then: initializationOptions and workspace/configuration) it
-- writes :messages and the answer buffer's lines to TUNA_OUT as JSON.
vim.opt.runtimepath:prepend(vim.env.TUNA_RTP)
vim.cmd.runtime('plugin/tunacode.lua')
local tunacode = require('tunacode')
tunacode.setup({
  cmd = { vim.env.TUNA_PYTHON, '-m', 'tunacode_lsp' },
  settings = { model = 'openai-compatible:scripted', baseUrl = vim.env.TUNA_MODEL_URL, approval = 'sometimes' },
})
vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    tunacode.with_client(function(client)
      client:exec_cmd({ title = 'status', command = 'tunacode.status', arguments = { vim.empty_dict() } }, {}, function()
        vim.schedule(function()
          local file = assert(io.open(vim.env.TUNA_OUT, 'w'))
          file:write(vim.json.encode({ messages = vim.fn.execute('messages'), answer = require('tunacode.view').lines() }))
          file:close()
        end)
      end)
    end)
  end,
})
