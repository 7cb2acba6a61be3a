-- Clean shutdown: remove the process's presence keys. Its recovery entries
-- (in_progress_identities, last_beat) go too, but only when its in-progress
-- list is empty; otherwise recovery must still find what is left there.
--
-- KEYS[1] NS:processes (set)
-- KEYS[2] NS:process:<identity> (hash)
-- KEYS[3] NS:workers:<identity> (hash)
-- KEYS[4] NS:in_progress_identities (set)
-- KEYS[5] NS:last_beat (hash)
-- KEYS[6] NS:in_progress:<identity> (list)
-- ARGV[1] identity
--
-- Returns the number of jobs left on the in-progress list.
redis.call("SREM", KEYS[1], ARGV[1])
redis.call("DEL", KEYS[2], KEYS[3])
local left = redis.call("LLEN", KEYS[6])
if left == 0 then
  redis.call("SREM", KEYS[4], ARGV[1])
  redis.call("HDEL", KEYS[5], ARGV[1])
end
return left
