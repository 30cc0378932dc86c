-- What every Neovim test driver starts with: `finish` writes the results as JSON to TUNA_OUT
-- and quits (exit code 0, else cquit with the code); a watchdog finishes with code 3 after
-- TUNA_WATCHDOG_MS; `wait` waits for a condition, bounded, or raises naming it; `run` runs the
-- scenario after VimEnter and finishes; `plugin` loads the plugin and sets it up against the
-- scripted model; `record_notices`, `record_shell_events`, `ask`, `checkhealth`, `disk`,
-- `checktime` and `pick_code_action` are the small pieces several drivers use the same way. A driver loads it
-- with dofile next to itself (see nvim_driver.lua).

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

--- vim.notify records each message into `into` (with `levels`, as { message, level }).
---@param into table
---@param levels? boolean
function H.record_notices(into, levels)
  vim.notify = function(message, level)
    table.insert(into, levels and { message = message, level = level } or message)
  end
end

--- A FileChangedShell autocommand records each event into `into`: with it Neovim never asks
--- W11/W12 itself.
---@param into table
function H.record_shell_events(into)
  vim.api.nvim_create_autocmd('FileChangedShell', {
    callback = function(ev)
      table.insert(into, { file = ev.file, reason = vim.v.fcs_reason })
    end,
  })
end

--- :TunaAsk `prompt`, then wait (60 s) for the plugin's request to end; returns its result.
---@param prompt string
function H.ask(prompt)
  local tunacode = require('tunacode')
  local before = tunacode.state.last_result
  vim.cmd('TunaAsk ' .. prompt)
  H.wait(60000, function()
    return not tunacode.state.busy and tunacode.state.last_result ~= before
  end, 'the answer to ' .. prompt)
  return tunacode.state.last_result
end

--- :checkhealth tunacode -> the lines of its report
function H.checkhealth()
  vim.cmd('checkhealth tunacode')
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd('bwipeout!')
  return lines
end

--- The bytes of the file at `path` on disk.
---@param path string
function H.disk(path)
  local file = assert(io.open(path, 'rb'))
  local bytes = file:read('*a')
  file:close()
  return bytes
end

--- :checktime on `buf` (as Neovim does when it regains focus) and what it did: the buffer's
--- lines, the bytes of the file at `path`, whether the buffer is modified, the warning shown,
--- and how many FileChangedShell events (recorded into `shell_events`) it gave.
---@param buf integer
---@param path string
---@param shell_events table
function H.checktime(buf, path, shell_events)
  vim.v.warningmsg = ''
  local events = #shell_events
  vim.cmd('checktime')
  return {
    lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
    disk = H.disk(path),
    modified = vim.bo[buf].modified,
    warning = vim.v.warningmsg,
    shell_events = #shell_events - events,
  }
end

--- vim.ui.select (the code-action menu) picks the action titled `title`, else nothing; the
--- menu's items as shown land in the returned table's `offered`.
---@param title string
---@return {offered?: string[]}
function H.pick_code_action(title)
  local menu = {}
  vim.ui.select = function(items, opts, on_choice)
    menu.offered = vim.tbl_map(function(item)
      return opts.format_item and opts.format_item(item) or tostring(item)
    end, items)
    for i, item in ipairs(items) do
      if item.action and item.action.title == title then
        return on_choice(item, i)
      end
    end
    on_choice(nil)
  end
  return menu
end

return H
