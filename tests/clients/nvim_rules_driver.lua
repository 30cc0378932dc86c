-- :TunaAsk /<Tab> completes the workspace's prompt commands, :TunaMode plan sends the next
-- request in plan mode, and the command runs as its expanded body. Writes what it saw to TUNA_OUT.

local env = vim.env
local results = { errors = {}, notices = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

local tunacode = H.plugin()

H.record_notices(results.notices, true)

local function scenario()
  H.setup({ approval = 'auto' })
  local ready = false
  tunacode.with_client(function()
    ready = true
  end)
  H.wait(30000, function()
    return ready
  end, 'the server to start')
  H.wait(10000, function()  -- asked in the background once the server was ready
    return tunacode.state.commands ~= nil
  end, 'the prompt commands')
  results.completion = vim.fn.getcompletion('TunaAsk /re', 'cmdline')
  results.mode_completion = vim.fn.getcompletion('TunaMode ', 'cmdline')
  vim.cmd('TunaMode plan')
  results.mode = tunacode.state.mode
  tunacode.ask('/review calc.py')
  H.wait(30000, function()
    return not tunacode.state.busy and tunacode.state.last_result ~= nil
  end, 'the request to end')
  results.stop_reason = tunacode.state.last_result.stopReason
end

H.run(scenario)
