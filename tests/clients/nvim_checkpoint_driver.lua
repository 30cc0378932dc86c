-- End to end in a real headless Neovim with the plugin, the real server and the scripted
-- model: the agent edits the open calc.py (through workspace/applyEdit and
-- tunacode/saveDocuments: the buffer shows it, no FileChangedShell, disk equals buffer);
-- :TunaChanges shows that request's diff; :TunaRewind (confirmed) restores the exact bytes on
-- disk and in the buffer; a second edit, then a change on disk by someone else: :TunaRewind
-- meets -32004, asks, and the forced retry restores. Writes what it saw as JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {}, notices = {}, prompts = {}, shell_events = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
local finish = H.start(results)

local tunacode = H.plugin()

H.record_notices(results.notices)
H.record_shell_events(results.shell_events)
local picks = {}
vim.ui.select = function(items, opts, on_choice)
  table.insert(results.prompts, { prompt = opts.prompt, items = items })
  on_choice(items[table.remove(picks, 1) or #items])
end

local wait = H.wait

--- The buffer's text as the bytes :write would give (lines, eol, fixeol).
local function buffer_bytes(buf)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  if vim.bo[buf].eol or vim.bo[buf].fixeol then
    text = text .. '\n'
  end
  return text
end

local ask = H.ask

--- The buffer and the file now (before any reload), then :checktime's warnings and events.
local function state(buf, path)
  local before = buffer_bytes(buf)
  local seen = H.checktime(buf, path, results.shell_events)
  seen.before_checktime = before
  seen.buffer = buffer_bytes(buf)
  return seen
end

local function rewind(choices, what)
  local count = #results.notices
  picks = choices
  vim.cmd('TunaRewind')
  wait(30000, function()
    return #results.notices > count
  end, what)
  return results.notices[#results.notices]
end

local function scenario()
  local path = vim.fn.fnamemodify('calc.py', ':p')
  H.setup({ approval = 'auto' })
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  local editor_win = vim.api.nvim_get_current_win()
  results.original = state(buf, path)

  -- 1. the agent edits the open, unmodified buffer
  results.first = ask('Fix add')
  vim.api.nvim_set_current_win(editor_win)
  results.attached = vim.lsp.buf_is_attached(buf, tunacode.running_client(tunacode.root()).id)
  results.edited = state(buf, path)
  results.undo_steps = vim.fn.undotree(buf).seq_last

  -- 2. :TunaChanges: that request's diff from the real server
  vim.cmd('TunaChanges')
  wait(30000, function()
    return vim.api.nvim_buf_get_name(0) == 'tunacode://changes'
  end, 'the changes buffer')
  results.changes = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd('tabclose')
  vim.api.nvim_set_current_win(editor_win)

  -- 3. :TunaRewind, confirmed: the exact bytes come back, on disk and in the buffer
  results.rewind_notice = rewind({ 1 }, 'the rewind')
  results.rewound = state(buf, path)

  -- 4. a second edit; then someone else changes the file (the buffer reloads it)
  results.second = ask('Fix add again')
  vim.api.nvim_set_current_win(editor_win)
  results.second_edited = state(buf, path)
  local file = assert(io.open(path, 'wb'))
  file:write(env.TUNA_OTHER_TEXT)
  file:close()
  vim.cmd('checktime')
  results.someone_else = state(buf, path)
  -- :TunaRewind: the conflict is asked about; keeping everything changes nothing
  results.kept_notice_count = #results.notices
  picks = { 1, 2 }
  vim.cmd('TunaRewind')
  wait(30000, function()
    return #results.prompts >= 3
  end, 'the conflict prompt')
  results.kept = state(buf, path)
  results.kept_notices = vim.list_slice(results.notices, results.kept_notice_count + 1)
  -- again, and overwrite: the forced retry restores the state before the second request
  results.forced_notice = rewind({ 1, 1 }, 'the forced rewind')
  results.forced = state(buf, path)
  results.last_request_id = tunacode.state.last_request_id or vim.NIL

  -- 5. a third edit; then the user types in the buffer and leaves it unsaved: the rewind
  -- meets -32004 (unsaved in the editor); overwriting reloads the buffer, and u brings the
  -- user's text back
  results.third = ask('Fix add a third time')
  vim.api.nvim_set_current_win(editor_win)
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { '# mine, unsaved' })
  results.unsaved_forced_notice = rewind({ 1, 1 }, 'the rewind over unsaved edits')
  results.unsaved_forced_answer = require('tunacode.view').lines()
  results.unsaved_forced = state(buf, path)
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent normal! u')
  end)
  results.undone = { lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false), modified = vim.bo[buf].modified }
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent edit!')
  end)

  -- 6. a shell command rewrites notes.txt, open and clean in a split: the buffer shows it when
  -- the request ends, before any :checktime of ours
  local notes_path = vim.fn.fnamemodify('notes.txt', ':p')
  vim.cmd('split ' .. vim.fn.fnameescape(notes_path))
  local notes = vim.api.nvim_get_current_buf()
  vim.api.nvim_set_current_win(editor_win)
  results.shell = ask('Rewrite the notes')
  results.notes = state(notes, notes_path)

  -- 7. the code-action menu on lines 1-2 of calc.py: the plugin runs `TunaCode: Explain`
  -- like :TunaAsk (the answer streams into the answer buffer), with the selection
  local menu = H.pick_code_action('TunaCode: Explain')
  local before = tunacode.state.last_result
  vim.api.nvim_set_current_win(editor_win)
  local second_line = vim.api.nvim_buf_get_lines(buf, 1, 2, true)[1]
  vim.lsp.buf.code_action({ range = { start = { 1, 0 }, ['end'] = { 2, #second_line - 1 } } })
  wait(30000, function()
    return not tunacode.state.busy and tunacode.state.last_result ~= before
  end, 'the answer to the code action')
  results.offered = menu.offered
  results.explained = tunacode.state.last_result
  results.answer_lines = require('tunacode.view').lines()
end

local function floats()
  return vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_config(win).relative ~= ''
  end, vim.api.nvim_list_wins())
end

--- TUNA_SCENARIO=unsaved: unsaved edits of the user's in calc.py and in other.py (opened
--- after the server started: the plugin attaches it as it opens). With approval 'ask' the
--- real server's tunacode/approve shows the diff in the float; `g1` allows. The agent reads
--- other.py and edits calc.py; then :TunaRewind.
local function unsaved_scenario()
  local path = vim.fn.fnamemodify('calc.py', ':p')
  local other_path = vim.fn.fnamemodify('other.py', ':p')
  H.setup({ approval = 'ask' })
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  local editor_win = vim.api.nvim_get_current_win()
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { '# mine, unsaved' })
  local started = false
  tunacode.status(function()
    started = true
  end)
  wait(30000, function()
    return started
  end, 'the server to start')
  vim.cmd('split ' .. vim.fn.fnameescape(other_path)) -- opened after the server started
  local other = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(other, -1, -1, false, { '# unsaved in other.py' })
  vim.api.nvim_set_current_win(editor_win)
  local done = false
  tunacode.ask('Fix add with my edits open')
  wait(30000, function()
    return #floats() == 1
  end, 'the approval float')
  local win = floats()[1]
  local float_buf = vim.api.nvim_win_get_buf(win)
  local title = vim.api.nvim_win_get_config(win).title
  results.float = {
    title = title and table.concat(vim.tbl_map(function(c)
      return c[1]
    end, title)) or '',
    lines = vim.api.nvim_buf_get_lines(float_buf, 0, -1, false),
    filetype = vim.bo[float_buf].filetype,
    focused = vim.api.nvim_get_current_win() == win,
  }
  results.other_attached = vim.lsp.buf_is_attached(other, tunacode.running_client(tunacode.root()).id)
  vim.api.nvim_feedkeys('g1', 'x', false)
  wait(60000, function()
    done = not tunacode.state.busy and tunacode.state.last_result ~= nil
    return done
  end, 'the answer')
  results.result = tunacode.state.last_result
  vim.api.nvim_set_current_win(editor_win)
  results.edited = state(buf, path)
  results.other = state(other, other_path)
  results.rewind_notice = rewind({ 1, 1 }, 'the rewind')
  results.rewound = state(buf, path)
end

--- TUNA_SCENARIO=hostile: the model tries to edit a file outside the workspace that is open
--- with the user's unsaved text (TUNA_OUTSIDE), and calc.py whose buffer is not modifiable
--- (Neovim refuses the applyEdit).
local function hostile_scenario()
  local path = vim.fn.fnamemodify('calc.py', ':p')
  H.setup({ approval = 'auto' })
  vim.cmd('edit ' .. vim.fn.fnameescape(env.TUNA_OUTSIDE))
  local outside = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(outside, -1, -1, false, { 'unsaved secret' })
  vim.cmd('split ' .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].modifiable = false
  results.result = ask('Do something')
  results.calc = state(buf, path)
  results.outside = state(outside, env.TUNA_OUTSIDE)
  results.outside_attached = #vim.lsp.get_clients({ bufnr = outside }) > 0
end

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  callback = function()
    vim.schedule(function()
      local scenarios = { unsaved = unsaved_scenario, hostile = hostile_scenario }
      local ok, err = pcall(scenarios[env.TUNA_SCENARIO or ''] or scenario)
      if not ok then
        table.insert(results.errors, tostring(err))
      end
      finish(0)
    end)
  end,
})
