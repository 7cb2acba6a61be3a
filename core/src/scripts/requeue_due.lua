-- Fragments (prepended, in this order): wake.lua, group.lua, group_lease.lua
-- Move due entries of the schedule or retry set onto their queues: for each
-- entry, claim (ZREM) and push in one atomic step, so a crash or a dropped
-- connection between the two can never lose a job. The payload pushed was
-- built by the caller (enqueued_at re-stamped), not re-encoded here: Lua's
-- cjson would round large integers in args.
--
-- A job at a priority level other than the default lists its level (see
-- list_priority_level in wake.lua) in the same step, as a push does: a
-- retry or a raw payload carrying a priority once landed on a level's
-- list that no worker read. A grouped job's group enters its queue's
-- ring when its list was empty (group.lua), for the same reason.
--
-- KEYS[1]   NS:schedule or NS:retry (zset)
-- KEYS[2]   NS:queues (set)
-- KEYS[3]   NS:priorities (set)
-- KEYS[4..] the list of each entry: NS:queue:<q>, or NS:queue@<level>:<q>
--           for a priority level other than the default, or its group's
--           list (see groups.rs)
-- ARGV[1]   the wake channel (NS:wake; see wake.lua, prepended)
-- ARGV[2..] twelve values per entry, aligned with KEYS[4..]: {entry as
--           stored, queue name, payload to push, "<level> <queue>" or ""
--           for the default level, its queue's ring or "" for a job
--           without a group, its group or "", its queue's declared limits
--           (NS:group_declared:<q>) and the limits the job declares for
--           its group, or "" and "" (group.lua); then, for the retry of a
--           sequence's job (its group held for it: fail.lua), its
--           queue's holds (NS:group_holds:<q>), running counts and parked
--           set, and its jid, else four ""}: such a retry goes back at the
--           head of its group's list (taken next, before the jobs pushed
--           after it) and its hold ends (group_lease.lua), its group back
--           in the turns
--
-- Returns the number of entries moved (an entry another process claimed
-- first is skipped).
local moved = 0
for i = 4, #KEYS do
  local base = 1 + (i - 4) * 12
  if redis.call("ZREM", KEYS[1], ARGV[base + 1]) == 1 then
    local name = ARGV[base + 2]
    redis.call("SADD", KEYS[2], name)
    list_priority_level(KEYS[3], ARGV[1], ARGV[base + 4])
    local holds = ARGV[base + 9]
    local length = redis.call(holds == "" and "LPUSH" or "RPUSH", KEYS[i], ARGV[base + 3])
    wake_if_was_empty(ARGV[1], name, length, 1)
    local ring, group = ARGV[base + 5], ARGV[base + 6]
    enter_group(ring, group, ARGV[base + 7], ARGV[base + 8], length, 1, KEYS[3], ARGV[1], name)
    if holds ~= "" then
      end_group_lease(holds, ARGV[base + 12], ARGV[base + 10], ARGV[base + 11], ring, group, ARGV[1], name)
    end
    moved = moved + 1
  end
end
return moved
