-- Fragments (prepended, in this order): batch/keys.lua, batch/status.lua, batch/expire.lua, batch/results.lua, batch/fire.lua, batch/check.lua, batch/succeeded.lua, batch/failed.lua
-- Take one entry of the schedule, retry or dead set off for good (a job
-- cancelled while it waits, or deleted), only if it is still there; a job
-- of a batch counts there in the same step (batch/): a cancelled one as
-- dead (it will never run: its batch, or workflow, ends with `death`), a
-- deleted one as failed (a dead one was counted when it died, and stays
-- so).
--
-- A cancellation is counted, as a worker counts the cancelled jobs it
-- drops or stops; a deletion is not.
--
-- KEYS[1]  NS:schedule, NS:retry or NS:dead (zset)
-- KEYS[2]  NS:outbox (hash), where batch callbacks are handed over
-- KEYS[3]  NS:stat:cancelled (when ARGV[6] is "1")
-- KEYS[4]  NS:stat:cancelled:<yyyy-mm-dd> (when ARGV[6] is "1")
-- ARGV[1]  the entry as stored
-- ARGV[2]  the job's batch id, "" for a job in none
-- ARGV[3]  its jid
-- ARGV[4]  the batch keys' prefix NS:batch:
-- ARGV[5]  now (epoch seconds)
-- ARGV[6]  "1": a cancellation, counted; "0": a deletion
--
-- Returns false when the entry was gone, else the hand-over ids of the
-- batch callbacks written to the outbox (an empty list for none).
if redis.call("ZREM", KEYS[1], ARGV[1]) == 0 then
  return false
end
if ARGV[6] == "1" then
  redis.call("INCR", KEYS[3])
  redis.call("INCR", KEYS[4])
end
local handed = {}
if ARGV[2] ~= "" then
  batch_failed(ARGV[4], ARGV[2], ARGV[3], ARGV[6] == "1", ARGV[5], KEYS[2], handed)
end
return handed
