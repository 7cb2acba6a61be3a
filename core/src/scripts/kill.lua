-- Fragments: none
-- Move one entry of the schedule or retry set to dead, only if it is still
-- there: claim (ZREM) and bury (ZADD) in one step, so a vanished entry
-- changes nothing (an identical payload already in dead is left alone).
--
-- KEYS[1]  NS:schedule or NS:retry (zset)
-- KEYS[2]  NS:dead (zset)
-- ARGV[1]  the entry as stored
-- ARGV[2]  died-at (epoch seconds): its score in dead
--
-- Returns 1 when it was moved, 0 when it was gone.
if redis.call("ZREM", KEYS[1], ARGV[1]) == 1 then
  redis.call("ZADD", KEYS[2], ARGV[2], ARGV[1])
  return 1
end
return 0
