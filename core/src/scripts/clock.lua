-- The clock (prepended to the scripts that need the time): Redis's own
-- (TIME), so every process of a fleet reads one clock; where TIME is
-- refused, the caller's time, passed in as `fallback`.
local function now_or(fallback)
  local ok, t = pcall(redis.call, "TIME")
  if ok then
    return tonumber(t[1]) + tonumber(t[2]) / 1000000
  end
  return tonumber(fallback)
end

