-- The answer buffer follows the stream only in windows whose cursor is on its last line:
-- two windows show it; one reads back (cursor on line 2), one sits at the end. Text is
-- appended as the stream appends it (view.append). Then a bash approval's lines with an
-- unsaved buffer open. Writes what it saw to TUNA_OUT as JSON.

local env = vim.env
local results = { errors = {} }
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

vim.opt.runtimepath:prepend(env.TUNA_RTP)
local view = require('tunacode.view')

local function scenario()
  view.append('> question\n\nfirst line\nsecond line\nthird line\n')
  local buf = view.buffer()
  vim.cmd('split')
  local reading = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(reading, buf)
  vim.cmd('split')
  local tail = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(tail, buf)
  vim.api.nvim_win_set_cursor(reading, { 2, 0 })
  vim.api.nvim_win_set_cursor(tail, { vim.api.nvim_buf_line_count(buf), 0 })
  for _, delta in ipairs({ 'The answer ', 'streams\nin ', 'deltas.\n' }) do
    view.append(delta)
  end
  results.count = vim.api.nvim_buf_line_count(buf)
  results.reading = vim.api.nvim_win_get_cursor(reading)[1]
  results.tail = vim.api.nvim_win_get_cursor(tail)[1]

  -- a bash approval names the open buffers with unsaved changes (the command may rewrite them)
  local approve = require('tunacode.approve')
  results.bash_clean = approve.lines({ tool = 'bash', detail = 'make' })
  vim.cmd('edit calc.py')
  vim.api.nvim_buf_set_lines(0, 0, 0, false, { '# mine' })
  results.bash_unsaved = approve.lines({ tool = 'bash', detail = 'make' })
  results.edit_unsaved = approve.lines({ tool = 'edit_file', detail = 'diff' })
end

H.run(scenario)
