-- Fragments (prepended, in this order): batch/keys.lua, batch/status.lua, batch/expire.lua, batch/results.lua, batch/fire.lua, batch/check.lua, batch/succeeded.lua, batch/failed.lua
-- Move one entry of the schedule or retry set to dead, only if it is still
-- there: claim (ZREM) and bury (ZADD) in one step, so a vanished entry
-- changes nothing (an identical payload already in dead is left alone).
-- A job of a batch dies there in the same step (batch/).
--
-- KEYS[1]  NS:schedule or NS:retry (zset)
-- KEYS[2]  NS:dead (zset)
-- KEYS[3]  NS:outbox (hash), where batch callbacks are handed over
-- ARGV[1]  the entry as stored
-- ARGV[2]  died-at (epoch seconds): its score in dead
-- ARGV[3]  the job's batch id, "" for a job in none
-- ARGV[4]  its jid
-- ARGV[5]  the batch keys' prefix NS:batch:
--
-- Returns false when the entry was gone, else the hand-over ids of the
-- batch callbacks written to the outbox (an empty list for none).
if redis.call("ZREM", KEYS[1], ARGV[1]) == 1 then
  redis.call("ZADD", KEYS[2], ARGV[2], ARGV[1])
  local handed = {}
  if ARGV[3] ~= "" then
    batch_failed(ARGV[5], ARGV[3], ARGV[4], true, ARGV[2], KEYS[3], handed)
  end
  return handed
end
return false
