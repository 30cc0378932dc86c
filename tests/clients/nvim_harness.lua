-- What every Neovim test driver starts with: `finish` writes the results as JSON to TUNA_OUT
-- and quits (exit code 0, else cquit with the code); a watchdog finishes with code 3 after
-- TUNA_WATCHDOG_MS; `wait` waits for a condition, bounded, or raises naming it.
-- A driver loads it with dofile next to itself (see nvim_driver.lua).

local H = {}

--- Start the watchdog; returns `finish(code)` that writes `results` and quits.
function H.start(results)
  local env = vim.env
  local function finish(code)
    local file = assert(io.open(env.TUNA_OUT, 'w'))
    file:write(vim.json.encode(results))
    file:close()
    vim.cmd(code == 0 and 'qa!' or ('cquit ' .. code))
  end
  local watchdog = assert(vim.uv.new_timer())
  watchdog:start(tonumber(env.TUNA_WATCHDOG_MS), 0, vim.schedule_wrap(function()
    table.insert(results.errors, 'watchdog fired')
    finish(3)
  end))
  return finish
end

function H.wait(ms, condition, what)
  if not vim.wait(ms, condition, 10) then
    error('timed out waiting for ' .. what)
  end
end

return H
