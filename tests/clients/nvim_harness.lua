-- What every Neovim test driver starts with: `finish` writes the results as JSON to TUNA_OUT
-- and quits (exit code 0, else cquit with the code); a watchdog finishes with code 3 after
-- TUNA_WATCHDOG_MS; `wait` waits for a condition, bounded, or raises naming it; `run` runs the
-- scenario after VimEnter and finishes; `plugin` loads the plugin and sets it up against the
-- scripted model. A driver loads it with dofile next to itself (see nvim_driver.lua).

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
  H.results, H.finish = results, finish
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

--- After VimEnter (scheduled out of its callback unless `opts.immediate`): run `scenario`, its
--- error into results.errors, then finish(0).
---@param scenario fun()
---@param opts? {immediate?: boolean}
function H.run(scenario, opts)
  local function go()
    local ok, err = pcall(scenario)
    if not ok then
      table.insert(H.results.errors, tostring(err))
    end
    H.finish(0)
  end
  vim.api.nvim_create_autocmd('VimEnter', {
    once = true,
    callback = function()
      if opts and opts.immediate then
        go()
      else
        vim.schedule(go)
      end
    end,
  })
end

--- The plugin from TUNA_RTP, loaded as Neovim would load it; returns require('tunacode').
function H.plugin()
  vim.opt.runtimepath:prepend(vim.env.TUNA_RTP)
  vim.cmd.runtime('plugin/tunacode.lua')
  return require('tunacode')
end

--- setup() with the server from TUNA_PYTHON and the scripted model at TUNA_MODEL_URL; `settings`
--- add to (or replace) those.
---@param settings? table
function H.setup(settings)
  require('tunacode').setup({
    cmd = { vim.env.TUNA_PYTHON, '-m', 'tunacode_lsp' },
    settings = vim.tbl_extend('force', { model = 'openai-compatible:scripted', baseUrl = vim.env.TUNA_MODEL_URL },
      settings or {}),
  })
end

return H
