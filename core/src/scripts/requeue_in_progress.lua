-- Fragments (prepended, in this order): clock.lua, wake.lua, group.lua, in_progress.lua
-- Put one job in progress back on its queue, on the end that is popped
-- next, in one atomic step (take off the in-progress key + push + re-take its
-- periodic run lock). Used by shutdown (own list, no staleness check) and
-- by orphan recovery (a dead process's jobs), where the owner's staleness
-- is re-checked here against Redis's clock so a process that came back to
-- life keeps its jobs. With basic fetch (ARGV[8] "-") the job is only in
-- memory: it is pushed without touching any in-progress key.
--
-- The run lock of an `until_executed` periodic job moves with it: extended
-- if still this job's, taken again if it lapsed, left alone if a newer run
-- holds it. As two steps, a failure between them left the job queued
-- without its lock, and the ticker could start the next run beside it.
--
-- KEYS[1] NS:in_progress:<identity> (hash, or a list of an earlier release)
-- KEYS[2] NS:queues (set)
-- KEYS[3] the job's list: NS:queue:<q>, or NS:queue@<level>:<q> at a priority
--         level other than the default, or its group's list (groups.rs)
-- KEYS[4] NS:last_beat (hash)
-- ARGV[1] the payload exactly as it stands in progress
-- ARGV[2] queue name
-- ARGV[3] identity owning KEYS[1]
-- ARGV[4] orphan threshold in seconds; "0" skips the staleness check
-- KEYS[5] NS:periodic:running:<pjid> (ignored unless ARGV[5] is "1")
-- ARGV[5] "1" to re-take the job's run lock
-- ARGV[6] the job's jid (the lock's owner)
-- ARGV[7] run-lock TTL while queued (whole seconds)
-- ARGV[8] the job's entry in KEYS[1]: its field, "*" for a list entry, "-"
--         for none (basic fetch); see in_progress.lua, prepended
-- ARGV[9] this host's clock (epoch seconds), used only where TIME is refused
--         (see clock.lua, prepended)
-- ARGV[10] the wake channel (NS:wake; see wake.lua, prepended)
-- ARGV[11] "0" not to add the queue's name to KEYS[2] nor the level or
--          the group's queue to KEYS[6] (sharded by queue, where both are
--          on the namespace's slot and the caller lists them first, see
--          list_queues.lua)
-- KEYS[6] NS:priorities (set; see list_priority_level in wake.lua)
-- ARGV[12] "<level> <queue>", or "" at the default level
-- ARGV[13] the queue's ring (NS:groups:<q>), or "" for a job without a group
-- ARGV[14] the job's group, or ""
-- ARGV[15] the queue's declared limits (NS:group_declared:<q>), or ""
--          when the job declares no limit for its group (group.lua)
-- ARGV[16] the limits it declares, or ""
--
-- The level is listed in the same step as the push, as every path that
-- puts a job on a level's list does: a job given back onto a level whose
-- listing was lost once sat on a list no worker read. So is a grouped
-- job's group entered in its ring (group.lua).
--
-- Returns 1 if requeued, 0 if the job was no longer in progress, -1 if
-- the owner has beaten within the threshold (nothing changed).
local threshold = tonumber(ARGV[4])
if threshold > 0 then
  local beat = tonumber(redis.call("HGET", KEYS[4], ARGV[3]) or "0")
  local now = now_or(ARGV[9])
  if now - beat < threshold then
    return -1
  end
end
if not take_in_progress(KEYS[1], ARGV[8], ARGV[1]) then
  return 0
end
if ARGV[11] ~= "0" then
  redis.call("SADD", KEYS[2], ARGV[2])
  list_priority_level(KEYS[6], ARGV[10], ARGV[12])
end
local length = redis.call("RPUSH", KEYS[3], ARGV[1])
wake_if_was_empty(ARGV[10], ARGV[2], length, 1)
enter_group(ARGV[13], ARGV[14], ARGV[15], ARGV[16], length, 1, ARGV[11] ~= "0" and KEYS[6] or "", ARGV[10], ARGV[2])
if ARGV[5] == "1" then
  local owner = redis.call("GET", KEYS[5])
  if not owner then
    redis.call("SET", KEYS[5], ARGV[6], "EX", ARGV[7])
  elseif owner == ARGV[6] then
    redis.call("EXPIRE", KEYS[5], ARGV[7])
  end
end
return 1
