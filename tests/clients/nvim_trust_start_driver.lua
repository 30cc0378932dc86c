-- The plugin's default start command in a hostile checkout: PATH has a relative entry (`.`)
-- and the checkout holds a `tunacode-lsp` program and Python packages named like the
-- server's imports, each writing a marker when run. The plugin must start the real server
-- (python3 -P -m tunacode_lsp from an absolute PATH folder) and the server must answer
-- tunacode.status. Writes what it saw as JSON to TUNA_OUT.

local env = vim.env
local results = { errors = {}, notices = {} }

local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/nvim_harness.lua')
H.start(results)

local tunacode = H.plugin()

H.record_notices(results.notices, true)

local function scenario()
  tunacode.setup({
    settings = { model = 'openai-compatible:scripted', baseUrl = env.TUNA_MODEL_URL, approval = 'read-only' },
  })
  results.default_cmd = tunacode.default_cmd()
  local status
  tunacode.status(function(s)
    status = s or false
  end)
  H.wait(30000, function()
    return status ~= nil
  end, 'tunacode.status from the server the plugin started')
  results.version = status and status.version or nil
end

H.run(scenario)
