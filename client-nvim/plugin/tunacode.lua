-- TunaCode commands: :TunaAsk [prompt], :TunaStop, :TunaSessions, :TunaNew.
-- The server starts on first use; require('tunacode').setup({...}) configures it.
if vim.g.loaded_tunacode then
  return
end
vim.g.loaded_tunacode = true

vim.api.nvim_create_user_command('TunaAsk', function(opts)
  local tunacode = require('tunacode')
  if opts.args ~= '' then
    tunacode.ask(opts.args)
    return
  end
  vim.ui.input({ prompt = 'Ask TunaCode: ' }, function(prompt)
    if prompt and prompt ~= '' then
      tunacode.ask(prompt)
    end
  end)
end, { nargs = '*', desc = 'Ask the TunaCode agent; the answer streams into a scratch buffer' })

vim.api.nvim_create_user_command('TunaStop', function()
  require('tunacode').stop()
end, { desc = 'Stop the running TunaCode request' })

vim.api.nvim_create_user_command('TunaSessions', function()
  require('tunacode').sessions()
end, { desc = 'Pick a stored TunaCode session and continue it' })

vim.api.nvim_create_user_command('TunaNew', function()
  require('tunacode').new()
end, { desc = 'Start a new TunaCode session with the next question' })

vim.api.nvim_create_autocmd('LspProgress', {
  group = vim.api.nvim_create_augroup('tunacode', { clear = true }),
  desc = 'Show TunaCode tool progress in the command line',
  callback = function(ev)
    require('tunacode').on_progress(ev)
  end,
})
