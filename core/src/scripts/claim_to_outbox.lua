-- Fragments: none
-- Sharded by queue: claim entries of the schedule, retry or dead set for
-- their queues, which live on other slots. Each entry is claimed (ZREM)
-- and written to the outbox in one atomic step, so it is always in one of
-- the two; outbox.rs then pushes it (push_once.lua) and deletes the entry.
--
-- KEYS[1]   NS:schedule, NS:retry or NS:dead (zset)
-- KEYS[2]   NS:queues (set)
-- KEYS[3]   NS:outbox (hash: hand-over id -> queue name, newline, payload)
-- ARGV[1..] quadruplets, one per entry: {entry as stored, queue name,
--           payload to push, hand-over id}
--
-- Returns the ids of the entries claimed (one another process claimed
-- first is skipped).
local claimed = {}
for i = 1, #ARGV, 4 do
  if redis.call("ZREM", KEYS[1], ARGV[i]) == 1 then
    redis.call("SADD", KEYS[2], ARGV[i + 1])
    redis.call("HSET", KEYS[3], ARGV[i + 3], ARGV[i + 1] .. "\n" .. ARGV[i + 2])
    claimed[#claimed + 1] = ARGV[i + 3]
  end
end
return claimed
