-- Prepended to the scripts that take acknowledged jobs off an in-progress
-- hash (ack.lua, take_held.lua; see scripts.rs).
--
-- take_fields(key, first, last) deletes the fields named by ARGV[first ..
-- last] from hash `key`: one HMGET to see which are there and one HDEL of
-- those, per 1,000 fields (Lua's stack bounds unpack). Returns the ARGV
-- positions of the fields that were not there.
local function take_fields(key, first, last)
  local missing = {}
  for from = first, last, 1000 do
    local to = math.min(from + 999, last)
    local found = redis.call("HMGET", key, unpack(ARGV, from, to))
    local gone = {}
    for i = from, to do
      if found[i - from + 1] then
        gone[#gone + 1] = ARGV[i]
      else
        missing[#missing + 1] = i
      end
    end
    if #gone > 0 then
      redis.call("HDEL", key, unpack(gone))
    end
  end
  return missing
end

