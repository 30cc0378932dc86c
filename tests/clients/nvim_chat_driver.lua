-- The chat features in a real headless Neovim with the plugin, the real server and the
-- scripted model: the model's thinking folds; :TunaChat's input sends several lines with
-- <CR> (normal mode), with #buffer, #selection and @file as context items; completion of
-- @file, /command and #; :TunaChanges fills the quickfix list, ]x / [x move between hunks,
-- gr rejects one (its lines go back in the file), ga accepts one. Writes JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {}, notices = {} }
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

local tunacode = H.plugin()
local view = require('tunacode.view')
local chat = require('tunacode.chat')

H.record_notices(results.notices)

local function answered(before)
  H.wait(60000, function()
    return not tunacode.state.busy and tunacode.state.last_result ~= before
  end, 'the answer')
  return tunacode.state.last_result
end

local function scenario()
  H.setup({ approval = 'auto', shellSandbox = 'off' })
  vim.cmd('edit calc.py')
  local calc = vim.api.nvim_get_current_buf()
  vim.cmd('normal! 2GVj') -- select lines 2-3
  vim.cmd('normal! \27')

  -- completion in the input
  chat.open()
  local input = vim.api.nvim_get_current_buf()
  results.input = { name = vim.api.nvim_buf_get_name(input), omnifunc = vim.bo[input].omnifunc }
  results.complete = {
    file = chat.complete('@ca', {}),
    hash = chat.complete('#s', {}),
    slash = chat.complete('/re', { { name = 'review' }, { name = 'release' }, { name = 'fix' } }),
    ask = tunacode.complete_ask('@no', 'TunaAsk explain @no'),
  }

  -- a multi-line prompt sent with <CR> in normal mode, naming #buffer, #selection and @notes.txt
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { 'Look at #buffer and #selection,', 'and @notes.txt.' })
  local before = tunacode.state.last_result
  vim.api.nvim_feedkeys(vim.keycode('<CR>'), 'x', false)
  results.first = answered(before)
  results.input_after = vim.api.nvim_buf_get_lines(input, 0, -1, false)
  local lines = view.lines()
  results.lines = lines
  local win = vim.fn.bufwinid(view.buffer())
  local row = vim.fn.index(lines, '```thinking') + 1
  results.thinking = { row = row, closed = vim.api.nvim_win_call(win, function()
    return vim.fn.foldclosed(row)
  end), after = lines[row + 3] }

  -- C-s in insert mode sends too: the model edits calc.py in two places
  vim.api.nvim_set_current_win(vim.fn.bufwinid(input))
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { 'fix both' })
  before = tunacode.state.last_result
  vim.api.nvim_feedkeys(vim.keycode('A<C-s><Esc>'), 'x', false)
  results.second = answered(before)

  -- :TunaChanges: the quickfix list, ]x [x, gr rejects the second hunk, ga accepts the first
  vim.cmd('TunaChanges')
  H.wait(10000, function()
    return vim.api.nvim_buf_get_name(0) == 'tunacode://changes'
  end, 'the changes buffer')
  results.qf = vim.tbl_map(function(item)
    return { file = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(item.bufnr), ':t'), lnum = item.lnum, text = item.text }
  end, vim.fn.getqflist())
  results.changes = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.api.nvim_feedkeys(']x', 'x', false)
  results.first_hunk = vim.api.nvim_win_get_cursor(0)[1]
  vim.api.nvim_feedkeys(']x', 'x', false)
  results.second_hunk = vim.api.nvim_win_get_cursor(0)[1]
  vim.api.nvim_feedkeys('[x', 'x', false)
  results.back = vim.api.nvim_win_get_cursor(0)[1]
  vim.api.nvim_feedkeys(']xgr', 'x', false)
  results.rejected_buffer = vim.api.nvim_buf_get_lines(calc, 0, -1, false)
  results.rejected_modified = vim.bo[calc].modified
  vim.api.nvim_feedkeys('[xga', 'x', false)
  results.after_accept = vim.api.nvim_win_get_cursor(0)[1]
  vim.api.nvim_feedkeys('[xgr', 'x', false) -- the first hunk again: calc.py still has its lines
  vim.api.nvim_feedkeys('gr', 'x', false) -- twice: it no longer has them
  results.reject_notice = results.notices[#results.notices]
end

H.run(scenario)
