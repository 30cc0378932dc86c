-- TunaCode commands: :[range]TunaAsk [prompt], :TunaStop, :TunaSessions, :TunaNew, :TunaChanges,
-- :TunaRewind[!] [N], :TunaEdit [N], :TunaSteer {text}, :TunaStatus, :TunaMode [agent|plan],
-- :TunaApprove [allow|session|deny], :TunaAllows [revoke [tool]].
-- :TunaChat (a multi-line input). :TunaAsk /<Tab> completes the prompt commands, @<Tab> files;
-- #buffer, #selection and @file in a prompt send them as context.
-- The server starts on first use; require('tunacode').setup({...}) configures it.
if vim.g.loaded_tunacode then
  return
end
vim.g.loaded_tunacode = true

-- With a range (:'<,'>TunaAsk, :%TunaAsk) the lines or the buffer go along as `context`.
vim.api.nvim_create_user_command('TunaAsk', function(opts)
  local tunacode = require('tunacode')
  local ask_opts = {}
  if opts.range > 0 then
    ask_opts.context = tunacode.range_context(vim.api.nvim_get_current_buf(), opts.line1, opts.line2)
  end
  if opts.args ~= '' then
    tunacode.ask(opts.args, ask_opts)
    return
  end
  vim.ui.input({ prompt = 'Ask TunaCode: ' }, function(prompt)
    if prompt and prompt ~= '' then
      tunacode.ask(prompt, ask_opts)
    end
  end)
end, {
  nargs = '*', range = true, desc = 'Ask the TunaCode agent (about the range); the answer streams into a scratch buffer',
  complete = function(arglead, cmdline)
    return require('tunacode').complete_ask(arglead, cmdline)
  end,
})

vim.api.nvim_create_user_command('TunaChat', function()
  require('tunacode.chat').open()
end, { desc = 'Open the TunaCode answer buffer with an input below it (<CR> in normal mode or <C-s> sends)' })

vim.api.nvim_create_user_command('TunaMode', function(opts)
  require('tunacode').set_mode(opts.args)
end, {
  nargs = '?', desc = 'Set the mode of the next TunaCode requests: agent, or plan (read-only tools; the answer is a plan)',
  complete = function()
    return { 'agent', 'plan' }
  end,
})

vim.api.nvim_create_user_command('TunaStop', function()
  require('tunacode').stop()
end, { desc = 'Stop the running TunaCode request' })

vim.api.nvim_create_user_command('TunaSessions', function()
  require('tunacode').sessions()
end, { desc = 'Pick a stored TunaCode session and continue it' })

vim.api.nvim_create_user_command('TunaNew', function()
  require('tunacode').new()
end, { desc = 'Start a new TunaCode session with the next question' })

vim.api.nvim_create_user_command('TunaChanges', function()
  require('tunacode').changes()
end, { desc = "Show the files this TunaCode session changed, as diffs" })

vim.api.nvim_create_user_command('TunaSteer', function(cmd)
  require('tunacode').steer(cmd.args)
end, { nargs = '+', desc = 'Tell the running TunaCode request something at its next turn (else ask it next)' })

vim.api.nvim_create_user_command('TunaRewind', function(cmd)
  local number = tonumber(cmd.args)
  if cmd.args ~= '' and not (number and number >= 1 and number == math.floor(number)) then
    vim.notify('TunaCode: :TunaRewind takes a request number (1 the oldest), or ! to pick', vim.log.levels.WARN)
    return
  end
  require('tunacode').rewind({ pick = cmd.bang, number = number })
end, {
  nargs = '?',
  bang = true,
  desc = 'Undo the last TunaCode request; N: back to before request N; !: pick the request (messages and files)',
})

vim.api.nvim_create_user_command('TunaEdit', function(cmd)
  local number = tonumber(cmd.args)
  if cmd.args ~= '' and not (number and number >= 1 and number == math.floor(number)) then
    vim.notify('TunaCode: :TunaEdit takes a request number (1 the oldest); without one it asks which', vim.log.levels.WARN)
    return
  end
  require('tunacode').rewind({ pick = number == nil, number = number, edit = true })
end, { nargs = '?', desc = 'Edit an earlier TunaCode prompt and send it again (rewinds to before it first)' })

vim.api.nvim_create_user_command('TunaApprove', function(cmd)
  local approve = require('tunacode.approve')
  local decision = approve.DECISIONS[cmd.args]
  if cmd.args ~= '' and not decision then
    return vim.notify('TunaCode: :TunaApprove allow|session|deny', vim.log.levels.WARN)
  end
  if decision then
    if not approve.answer(decision) then
      vim.notify('TunaCode: no approval is pending')
    end
  elseif not approve.reshow() then
    local allows = #approve.session_allows > 0 and table.concat(approve.session_allows, ', ') or 'none'
    vim.notify('TunaCode: no approval is pending; allowed for this session: ' .. allows)
  end
end, {
  nargs = '?',
  complete = function()
    return { 'allow', 'session', 'deny' }
  end,
  desc = 'Answer the pending TunaCode approval (allow|session|deny), or show it again',
})

vim.api.nvim_create_user_command('TunaAllows', function(cmd)
  require('tunacode').allows(cmd.args)
end, {
  nargs = '*',
  complete = function(arglead, cmdline)
    if cmdline:match('revoke%s') then
      return require('tunacode.approve').session_allows
    end
    return { 'revoke' }
  end,
  desc = 'List the tools allowed for the whole TunaCode session; revoke [tool] ends the allows',
})

vim.api.nvim_create_user_command('TunaStatus', function()
  require('tunacode').status()
end, { desc = "Show the TunaCode server's state: version, running requests, MCP servers" })

vim.api.nvim_create_autocmd('LspProgress', {
  group = vim.api.nvim_create_augroup('tunacode', { clear = true }),
  desc = 'Show TunaCode tool progress in the command line',
  callback = function(ev)
    require('tunacode').on_progress(ev)
  end,
})
