-- Fragments: none
-- Clean shutdown: remove the process's presence keys. Its recovery entries
-- (in_progress_identities, last_beat) go too, but only when nothing is left
-- in progress; otherwise recovery must still find what is left there.
--
-- KEYS[1] NS:processes (set)
-- KEYS[2] NS:process:<identity> (hash)
-- KEYS[3] NS:workers:<identity> (hash)
-- KEYS[4] NS:in_progress_identities (set)
-- KEYS[5] NS:last_beat (hash)
-- KEYS[6] NS:in_progress:<identity> (hash, or a list of an earlier release)
-- ARGV[1] identity
-- ARGV[2] jobs left in progress elsewhere (sharded by queue: on the queues'
--         slots, counted by the caller), "0" otherwise
--
-- Returns the number of jobs left in progress.
redis.call("SREM", KEYS[1], ARGV[1])
redis.call("DEL", KEYS[2], KEYS[3])
local left = 0
local kind = redis.call("TYPE", KEYS[6]).ok
if kind == "hash" then
  left = redis.call("HLEN", KEYS[6])
elseif kind == "list" then
  left = redis.call("LLEN", KEYS[6])
end
left = left + tonumber(ARGV[2] or "0")
if left == 0 then
  redis.call("SREM", KEYS[4], ARGV[1])
  redis.call("HDEL", KEYS[5], ARGV[1])
end
return left
