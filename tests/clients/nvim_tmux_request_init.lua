-- init.lua of the terminal request test (test_neovim_tmux_request.py): the plugin in a real
-- Neovim in tmux, approval auto, with the plugin's statusline in every window. `:lua
-- TunaDump()` writes what the test checks to TUNA_OUT as JSON: each file buffer's lines and
-- modified flag, the answer buffer's lines and :messages.
vim.opt.runtimepath:prepend(vim.env.TUNA_RTP)
vim.cmd.runtime('plugin/tunacode.lua')
local tunacode = require('tunacode')
tunacode.setup({
  cmd = { vim.env.TUNA_PYTHON, '-m', 'tunacode_lsp' },
  settings = { model = 'openai-compatible:scripted', baseUrl = vim.env.TUNA_MODEL_URL, approval = 'auto',
    shellSandbox = 'off' },
})
vim.o.laststatus = 2
vim.o.statusline = "%f %= %{v:lua.require'tunacode'.statusline()} " -- docs/neovim.md's plugin-statusline

function _G.TunaDump()
  local buffers = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(buf)
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == '' and name ~= '' then
      buffers[vim.fn.fnamemodify(name, ':t')] = { lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
        modified = vim.bo[buf].modified }
    end
  end
  local file = assert(io.open(vim.env.TUNA_OUT, 'w'))
  file:write(vim.json.encode({ buffers = buffers, answer = require('tunacode.view').lines(),
    messages = vim.fn.execute('messages') }))
  file:close()
end
