-- Fragments (prepended, in this order): clock.lua
-- After orphan recovery emptied a dead process's in-progress key, forget the
-- identity, re-checking (against Redis's clock) that it is still stale and
-- nothing is left in progress (an emptied hash or list no longer exists).
--
-- KEYS[1] NS:in_progress_identities (set)
-- KEYS[2] NS:last_beat (hash)
-- KEYS[3] NS:in_progress:<identity> (hash, or a list of an earlier release)
-- ARGV[1] identity
-- ARGV[2] orphan threshold (seconds)
-- ARGV[3] this host's clock (epoch seconds), used only where TIME is refused
--         (see clock.lua, prepended)
--
-- Returns 1 if forgotten, 0 if it still has jobs or has beaten since.
local beat = tonumber(redis.call("HGET", KEYS[2], ARGV[1]) or "0")
local now = now_or(ARGV[3])
if now - beat < tonumber(ARGV[2]) or redis.call("EXISTS", KEYS[3]) == 1 then
  return 0
end
redis.call("SREM", KEYS[1], ARGV[1])
redis.call("HDEL", KEYS[2], ARGV[1])
return 1
