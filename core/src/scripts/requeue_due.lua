-- Fragments (prepended, in this order): wake.lua
-- Move due entries of the schedule or retry set onto their queues: for each
-- entry, claim (ZREM) and push in one atomic step, so a crash or a dropped
-- connection between the two can never lose a job. The payload pushed was
-- built by the caller (enqueued_at re-stamped), not re-encoded here: Lua's
-- cjson would round large integers in args.
--
-- A job at a priority level other than the default lists its level (see
-- list_priority_level in wake.lua) in the same step, as a push does: a
-- retry or a raw payload carrying a priority once landed on a level's
-- list that no worker read.
--
-- KEYS[1]   NS:schedule or NS:retry (zset)
-- KEYS[2]   NS:queues (set)
-- KEYS[3]   NS:priorities (set)
-- KEYS[4..] the list of each entry: NS:queue:<q>, or NS:queue@<level>:<q>
--           for a priority level other than the default
-- ARGV[1]   the wake channel (NS:wake; see wake.lua, prepended)
-- ARGV[2..] quadruplets, one per entry, aligned with KEYS[4..]: {entry as
--           stored, queue name, payload to push, "<level> <queue>" or ""
--           for the default level}
--
-- Returns the number of entries moved (an entry another process claimed
-- first is skipped).
local moved = 0
for i = 4, #KEYS do
  local base = 1 + (i - 4) * 4
  if redis.call("ZREM", KEYS[1], ARGV[base + 1]) == 1 then
    redis.call("SADD", KEYS[2], ARGV[base + 2])
    list_priority_level(KEYS[3], ARGV[1], ARGV[base + 4])
    wake_if_was_empty(ARGV[1], ARGV[base + 2], redis.call("LPUSH", KEYS[i], ARGV[base + 3]), 1)
    moved = moved + 1
  end
end
return moved
