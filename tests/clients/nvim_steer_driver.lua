-- :TunaSteer in a real headless Neovim with the plugin, the real server and the scripted
-- model: while a bash call blocks on the FIFO `gate`, :TunaSteer reaches the running
-- request (accepted); after the answer, :TunaSteer is asked as the next question.
-- Writes what it saw as JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {}, notices = {}, events = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

local tunacode = H.plugin()

H.record_notices(results.notices)
vim.api.nvim_create_autocmd('User', {
  pattern = 'TunaCodeEvent',
  callback = function(ev)
    table.insert(results.events, { type = ev.data.type, status = ev.data.status, text = ev.data.text })
  end,
})

local wait = H.wait

local function seen(type_, status)
  for _, event in ipairs(results.events) do
    if event.type == type_ and (status == nil or event.status == status) then
      return true
    end
  end
  return false
end

local function scenario()
  H.setup({ approval = 'auto', shellSandbox = 'off' })
  vim.cmd('TunaAsk fix sum')
  wait(60000, function()
    return seen('tool_call_update', 'in_progress')
  end, 'the bash call to run')
  local count = #results.notices
  vim.cmd('TunaSteer also test the empty list')
  wait(30000, function()
    return #results.notices > count
  end, 'the steer answer')
  results.steer_notice = results.notices[#results.notices]
  local gate = assert(io.open(vim.fn.fnamemodify('gate', ':p'), 'w'))
  gate:write('go\n')
  gate:close()
  wait(60000, function()
    return not tunacode.state.busy and tunacode.state.last_result ~= nil
  end, 'the answer')
  results.first = tunacode.state.last_result
  results.user_message = seen('user_message')
  local before = tunacode.state.last_result
  vim.cmd('TunaSteer and now the docs')
  wait(60000, function()
    return not tunacode.state.busy and tunacode.state.last_result ~= before
  end, 'the steer asked as a question')
  results.second = tunacode.state.last_result
end

H.run(scenario)
