-- Fragments (prepended, in this order): batch/keys.lua, batch/status.lua, batch/expire.lua, batch/results.lua, batch/fire.lua, batch/check.lua, batch/succeeded.lua, batch/failed.lua
-- Close a batch its creator has finished adding jobs to: from now on its
-- counts fire its callbacks, and those already due fire here.
--
-- KEYS[1]  NS:outbox (hash), where batch callbacks are handed over
-- ARGV[1]  the batch keys' prefix NS:batch:
-- ARGV[2]  the batch id
-- ARGV[3]  now (epoch seconds)
--
-- Returns the hand-over ids of the callbacks written to the outbox, or the
-- error NOBATCH <id> for a batch that does not exist.
local batch = ARGV[1] .. ARGV[2]
if redis.call("EXISTS", batch) == 0 then
  return redis.error_reply("NOBATCH " .. ARGV[2])
end
redis.call("HDEL", batch, "open")
-- Its keys live ttl from now (set at its opening; renewed here, once its
-- jobs are pushed).
local ttl = redis.call("HGET", batch, "ttl")
redis.call("EXPIRE", batch, ttl)
redis.call("EXPIRE", batch .. ":failures", ttl)
local handed = {}
batch_check(ARGV[1], ARGV[2], ARGV[3], KEYS[1], handed)
return handed
