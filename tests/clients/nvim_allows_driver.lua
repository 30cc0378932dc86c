-- Session-wide allows in a real headless Neovim with the plugin, the real server and the
-- scripted model: request 1 asks for bash and g2 allows it for the session (a note in the
-- answer buffer, `allowed: bash` in the statusline); request 2 runs bash without asking;
-- :TunaAllows lists it; :TunaAllows revoke ends it; request 3 asks again (g3 denies).
-- Then an approval float on a 30-column screen: its footer fits whole. Writes JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {}, notices = {}, asked = {} }
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

local tunacode = H.plugin()
local approve = require('tunacode.approve')
local view = require('tunacode.view')

H.record_notices(results.notices)

-- the user's answer to each approval float: pressed as keys, as a person would
local answers = { 'g2', 'g3' }
local timer = assert(vim.uv.new_timer())
timer:start(20, 20, vim.schedule_wrap(function()
  local current = approve.current
  if current and current.win and not current.pressed then
    current.pressed = true
    table.insert(results.asked, current.params.tool)
    vim.api.nvim_feedkeys(table.remove(answers, 1) or 'g3', 'x', false)
  end
end))

local ask = H.ask

local function statusline()
  return vim.api.nvim_eval_statusline(vim.o.statusline, {}).str
end

local function scenario()
  H.setup({ approval = 'ask', shellSandbox = 'off' })
  vim.o.statusline = "%{v:lua.require'tunacode'.statusline()}"
  results.first = ask('one')
  results.after_first = { statusline = statusline(), lines = view.lines(), asked = vim.deepcopy(results.asked) }
  results.second = ask('two')
  results.after_second = { asked = vim.deepcopy(results.asked) }
  vim.cmd('TunaAllows')
  results.listed = results.notices[#results.notices]
  vim.cmd('TunaAllows revoke')
  results.revoked = { notice = results.notices[#results.notices], statusline = statusline(),
    lines = view.lines(), running = tunacode.running_client(tunacode.root()) ~= nil }
  results.third = ask('three')
  results.after_third = { asked = vim.deepcopy(results.asked), statusline = statusline() }

  -- a narrow screen: the approval footer is never cut
  vim.o.columns = 30
  local shown = approve.ask({ tool = 'bash', summary = 'make', detail = 'make', detailKind = 'command' }, function() end)
  approve.current.pressed = true -- not answered by the timer above
  local config = vim.api.nvim_win_get_config(shown.win)
  local footer = config.footer and table.concat(vim.tbl_map(function(chunk)
    return chunk[1]
  end, config.footer)) or ''
  results.narrow = { width = config.width, footer = footer }
  approve.answer('deny')
end

H.run(scenario)
