-- Per-class execution metrics (see core/src/metrics.rs), prepended to
-- ack.lua, which calls record_metrics last.
--
-- record_metrics(first_key, a) reads, from ARGV[a]:
--   K, the number of metric hashes to increment (KEYS[first_key ..
--   first_key + K - 1]: minutes' NS:metrics:<minute>, then
--   NS:metrics:total); then for each: its TTL in seconds (0: none), c, and
--   c pairs {field, increment}.
-- The TTL is set when an increment creates a field (its new value is the
-- increment), which every new key's first one does: one EXPIRE per new
-- field, not one per call.
local function record_metrics(first_key, a)
  local k = tonumber(ARGV[a] or "0")
  local at = a + 1
  for i = 1, k do
    local key = KEYS[first_key + i - 1]
    local ttl = tonumber(ARGV[at])
    local c = tonumber(ARGV[at + 1])
    at = at + 2
    local created = false
    for j = 0, c - 1 do
      local increment = ARGV[at + 2 * j + 1]
      if redis.call("HINCRBY", key, ARGV[at + 2 * j], increment) == tonumber(increment) then
        created = true
      end
    end
    at = at + 2 * c
    if created and ttl > 0 then
      redis.call("EXPIRE", key, ttl)
    end
  end
end
