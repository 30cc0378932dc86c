-- :TunaRewind to any request, in a real headless Neovim with the plugin, the real server and
-- the scripted model: three requests each write a file; :TunaRewind! picks request 2 from
-- the session's requests (vim.ui.select), confirms, and requests 2 and 3 go with their
-- files; :TunaRewind 9 names what is missing; :TunaRewind 1 goes back to the start.
-- Writes what it saw as JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {}, notices = {}, prompts = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

local tunacode = H.plugin()

H.record_notices(results.notices)
local picks = {}
vim.ui.input = function(opts, on_confirm)
  table.insert(results.prompts, { prompt = opts.prompt, default = opts.default })
  on_confirm(opts.default .. ' again')
end
vim.ui.select = function(items, opts, on_choice)
  local shown = {}
  for _, item in ipairs(items) do
    table.insert(shown, opts.format_item and opts.format_item(item) or item)
  end
  table.insert(results.prompts, { prompt = opts.prompt, items = shown })
  on_choice(items[table.remove(picks, 1) or #items])
end

local wait = H.wait

local ask = H.ask

local function rewind(command, choices, what)
  local count = #results.notices
  picks = choices
  vim.cmd(command)
  wait(30000, function()
    return #results.notices > count
  end, what)
  return results.notices[#results.notices]
end

local function exists(name)
  return vim.uv.fs_stat(vim.fn.fnamemodify(name, ':p')) ~= nil
end

local function scenario()
  H.setup({ approval = 'auto' })
  results.answers = { ask('write one'), ask('write two'), ask('write three') }
  results.before = { exists('one.txt'), exists('two.txt'), exists('three.txt') }
  results.picked_notice = rewind('TunaRewind!', { 2, 1 }, 'the picked rewind')
  results.after_pick = { exists('one.txt'), exists('two.txt'), exists('three.txt') }
  local before = tunacode.state.last_result
  results.edit_notice = rewind('TunaEdit 1', { 1 }, 'the edit')
  wait(60000, function()
    return not tunacode.state.busy and tunacode.state.last_result ~= before
  end, 'the edited prompt to be answered')
  results.edited = tunacode.state.last_result
  results.after_edit = { exists('one.txt'), exists('two.txt'), exists('three.txt') }
  results.missing_notice = rewind('TunaRewind 9', {}, 'the missing request')
  results.first_notice = rewind('TunaRewind 1', { 1 }, 'the rewind to the start')
  results.after_first = { exists('one.txt'), exists('two.txt'), exists('three.txt') }
end

H.run(scenario)
