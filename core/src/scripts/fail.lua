-- Fragments (prepended, in this order): in_progress.lua, batch/keys.lua, batch/status.lua, batch/expire.lua, batch/results.lua, batch/fire.lua, batch/check.lua, batch/succeeded.lua, batch/failed.lua
-- File a failed (or unparseable) job under retry or dead, or discard it, or
-- put a job that was over a rate limiter it declared back on the schedule
-- (not a failure: no stats, no attempt, no history), and take it off its
-- in-progress key in the same atomic step, so the job is always in exactly
-- one place: never lost between the two, never in both.
--
-- KEYS[1] NS:in_progress:<identity> (hash, or a list of an earlier release)
-- KEYS[2] the target set: NS:retry, NS:dead or NS:schedule (zset)
-- KEYS[3] NS:stat:failed
-- KEYS[4] NS:stat:failed:<yyyy-mm-dd>
-- KEYS[5] NS:attempts:<jid> (list)
-- KEYS[6] NS:history (list)
-- ARGV[1]  the job's entry in KEYS[1]: its field, "*" for a list entry,
--          "-" for none (basic fetch); see in_progress.lua, prepended
-- ARGV[2]  the payload exactly as fetched (how a list entry is found)
-- ARGV[3]  "retry" | "dead" | "discard" | "reschedule" | "cancelled"
--          (filed as a discard, counted in its batch as dead)
-- ARGV[4]  score in KEYS[2] (epoch seconds: retry-at, died-at or run-at)
-- ARGV[5]  the payload to file (with retry_count, error fields, ...)
-- ARGV[6]  attempt entry JSON, or "" to record none
-- ARGV[7]  attempts list TTL (whole seconds)
-- ARGV[8]  history entry JSON
-- ARGV[9]  history cap
-- ARGV[10] dead set: most entries kept
-- ARGV[11] dead set: entries scored below this are trimmed (epoch seconds)
-- KEYS[7]  the job's periodic run lock (ignored when ARGV[12] is "0")
-- KEYS[8]  the job's unique lock (ignored when ARGV[13] is "0")
-- ARGV[12] "1" if the job holds a periodic run lock
-- ARGV[13] "1" if the job holds a unique lock
-- ARGV[14] the job's jid (the owner those locks must still hold)
-- ARGV[15] run-lock TTL on retry (whole seconds: the retry delay plus the
--          queued TTL, so the lock outlives the wait in the retry set)
-- ARGV[16] unique-lock TTL on retry (whole seconds: the retry delay plus
--          unique_for); a lock with longer left keeps it
--
-- KEYS[9]  NS:result:<jid> (ignored when ARGV[17] is "0" or absent)
-- KEYS[10] NS:result_ready:<jid>
-- ARGV[17] result TTL in seconds, "0" for a job without result_ttl
-- ARGV[18] the result record JSON (status retrying, dead or failed)
-- ARGV[19] "1" if that status is final (a token goes on KEYS[10])
--
-- KEYS[11] sharded by queue: NS:filed:<identity>:<token>, the marker that
--          this failure is filed (its in-progress entry is on the queue's
--          slot, taken off after this script; see completion/file.rs). Ignored
--          when ARGV[20] is "0" or absent.
-- ARGV[20] the marker's TTL (whole seconds), "0" for none
--
-- KEYS[12] NS:outbox (hash), where batch callbacks are handed over
-- ARGV[21] the job's batch id, "" (or absent) for a job in none
-- ARGV[22] the batch keys' prefix NS:batch:
-- ARGV[23] now (epoch seconds)
-- KEYS[13] NS:group_leases:<q>, KEYS[14] NS:group_holds:<q>: a sequence's
--          job filed to retry holds its key (ignored when ARGV[24] is ""
--          or absent): its lease ARGV[24] ("<identity> <token>") becomes a
--          hold, jid -> "<ARGV[25], its group>\n<the filed payload>", so
--          the next job of its key waits for the retry (see group_lease.lua)
-- KEYS[15] stat:processed, KEYS[16] stat:processed:<yyyy-mm-dd>: in
--          Sidekiq's layout a failed run counts as processed too, as
--          Sidekiq counts it (ignored when ARGV[26] is not "1")
-- ARGV[26] "1" to count the run in KEYS[15] and KEYS[16]
-- A job of a batch counts there as failed (retry, discard) or dead (dead,
-- and cancelled: it will never run, so its batch, and a workflow it is a
-- step of, ends with `death` instead of waiting for it); a reschedule
-- counts nothing (batch/).
--
-- Locks: a retried or rescheduled job keeps them, each extended over the delay, so no
-- duplicate gets in while it waits; a dead or discarded job releases them.
-- Only ever the owner's lock.
--
-- Returns the hand-over ids of the batch callbacks written to the outbox,
-- none if the job was no longer in progress here (shutdown or recovery
-- already put it back on its queue; that copy will run again) or its
-- marker says it is filed already (a repeat).
if not take_in_progress(KEYS[1], ARGV[1], ARGV[2]) then
  return {}
end
if (ARGV[20] or "0") ~= "0" and not redis.call("SET", KEYS[11], "1", "NX", "EX", ARGV[20]) then
  return {}
end
local mode = ARGV[3]
if mode == "retry" or mode == "dead" or mode == "reschedule" then
  redis.call("ZADD", KEYS[2], ARGV[4], ARGV[5])
end
if mode == "dead" then
  redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", "(" .. ARGV[11])
  redis.call("ZREMRANGEBYRANK", KEYS[2], 0, -(tonumber(ARGV[10]) + 1))
end
if mode ~= "reschedule" then
  redis.call("INCR", KEYS[3])
  redis.call("INCR", KEYS[4])
end
if ARGV[26] == "1" then
  redis.call("INCR", KEYS[15])
  redis.call("INCR", KEYS[16])
end
if ARGV[6] ~= "" then
  redis.call("RPUSH", KEYS[5], ARGV[6])
  redis.call("EXPIRE", KEYS[5], ARGV[7])
end
local function owns(lock)
  return redis.call("GET", lock) == ARGV[14]
end
if mode == "retry" or mode == "reschedule" then
  if ARGV[12] == "1" and owns(KEYS[7]) then
    redis.call("EXPIRE", KEYS[7], ARGV[15])
  end
  if ARGV[13] == "1" and owns(KEYS[8]) and redis.call("TTL", KEYS[8]) < tonumber(ARGV[16]) then
    redis.call("EXPIRE", KEYS[8], ARGV[16])
  end
else
  if ARGV[12] == "1" and owns(KEYS[7]) then
    redis.call("DEL", KEYS[7])
  end
  if ARGV[13] == "1" and owns(KEYS[8]) then
    redis.call("DEL", KEYS[8])
  end
end
if (ARGV[17] or "0") ~= "0" then
  redis.call("SET", KEYS[9], ARGV[18], "EX", ARGV[17])
  if ARGV[19] == "1" then
    redis.call("DEL", KEYS[10])
    redis.call("RPUSH", KEYS[10], "1")
    redis.call("EXPIRE", KEYS[10], ARGV[17])
  end
end
local cap = tonumber(ARGV[9])
if cap > 0 then
  redis.call("LPUSH", KEYS[6], ARGV[8])
  redis.call("LTRIM", KEYS[6], 0, cap - 1)
end
if mode == "retry" and (ARGV[24] or "") ~= "" and redis.call("HDEL", KEYS[13], ARGV[24]) == 1 then
  redis.call("HSET", KEYS[14], ARGV[14], ARGV[25] .. "\n" .. ARGV[5])
end
local handed = {}
if (ARGV[21] or "") ~= "" and mode ~= "reschedule" then
  batch_failed(ARGV[22], ARGV[21], ARGV[14], mode == "dead" or mode == "cancelled", ARGV[23], KEYS[12], handed)
end
return handed
