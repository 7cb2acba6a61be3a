-- Fragments (prepended, in this order): batch.lua
-- Take one entry of the schedule, retry or dead set off for good (a job
-- cancelled while it waits, or deleted), only if it is still there; a job
-- of a batch counts there as failed in the same step (batch.lua; a dead
-- one was counted when it died, and stays so).
--
-- KEYS[1]  NS:schedule, NS:retry or NS:dead (zset)
-- KEYS[2]  NS:outbox (hash), where batch callbacks are handed over
-- ARGV[1]  the entry as stored
-- ARGV[2]  the job's batch id, "" for a job in none
-- ARGV[3]  its jid
-- ARGV[4]  the batch keys' prefix NS:batch:
-- ARGV[5]  now (epoch seconds)
--
-- Returns false when the entry was gone, else the hand-over ids of the
-- batch callbacks written to the outbox (an empty list for none).
if redis.call("ZREM", KEYS[1], ARGV[1]) == 0 then
  return false
end
local handed = {}
if ARGV[2] ~= "" then
  batch_failed(ARGV[4], ARGV[2], ARGV[3], false, ARGV[5], KEYS[2], handed)
end
return handed
