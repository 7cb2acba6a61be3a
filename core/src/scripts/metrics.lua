-- Per-class execution metrics (see core/src/metrics.rs), prepended to
-- ack.lua, which calls record_metrics last.
--
-- record_metrics(first_key, a) reads, from ARGV[a]:
--   K, the number of metric hashes to increment (KEYS[first_key ..
--   first_key + K - 1]: minutes' NS:metrics:<minute>, then
--   NS:metrics:total), then (when K > 0) the cap on distinct classes;
--   then for each hash: its TTL in seconds (0: none), "1" if its fields
--   begin with a queue (`<queue>|<class>|<name>`, the totals) or "0"
--   (`<class>|<name>`), c, and c pairs {field, increment}.
--   KEYS[first_key + K] (when K > 0) is NS:metrics:classes, the set of
--   classes the hashes keep: a class not in it is added while it holds
--   fewer than the cap, else its fields are counted under "(other)".
--   Anyone who can push names classes; the hashes stay bounded.
-- The TTL is set when an increment creates a field (its new value is the
-- increment), which every new key's first one does: one EXPIRE per new
-- field, not one per call.
local function record_metrics(first_key, a)
  local k = tonumber(ARGV[a] or "0")
  if k == 0 then
    return
  end
  local classes_key = KEYS[first_key + k]
  local cap = tonumber(ARGV[a + 1])
  local kept = {["(other)"] = true, ["(unknown)"] = true}
  local function label(class)
    if kept[class] == nil then
      kept[class] = redis.call("SISMEMBER", classes_key, class) == 1
        or (redis.call("SCARD", classes_key) < cap and redis.call("SADD", classes_key, class) == 1)
    end
    if kept[class] then
      return class
    end
    return "(other)"
  end
  local at = a + 2
  for i = 1, k do
    local key = KEYS[first_key + i - 1]
    local ttl = tonumber(ARGV[at])
    local queued = ARGV[at + 1] == "1"
    local c = tonumber(ARGV[at + 2])
    at = at + 3
    local created = false
    for j = 0, c - 1 do
      local field = ARGV[at + 2 * j]
      local increment = ARGV[at + 2 * j + 1]
      local queue, class, name
      if queued then
        queue, class, name = string.match(field, "^([^|]*)|(.*)|([^|]*)$")
      else
        class, name = string.match(field, "^(.*)|([^|]*)$")
      end
      if class then
        local as = label(class)
        if as ~= class then
          field = queued and (queue .. "|" .. as .. "|" .. name) or (as .. "|" .. name)
        end
      end
      if redis.call("HINCRBY", key, field, increment) == tonumber(increment) then
        created = true
      end
    end
    at = at + 2 * c
    if created and ttl > 0 then
      redis.call("EXPIRE", key, ttl)
    end
  end
end
