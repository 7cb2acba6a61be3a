-- Put one job from an in-progress list back on its queue, on the end that is
-- popped next, in one atomic step (take off the list + push). Used by
-- shutdown (own list, no staleness check) and by orphan recovery (a dead
-- process's list), where the owner's staleness is re-checked here against
-- Redis's clock so a process that came back to life keeps its jobs.
--
-- KEYS[1] NS:in_progress:<identity> (list)
-- KEYS[2] NS:queues (set)
-- KEYS[3] NS:queue:<q> (list)
-- KEYS[4] NS:last_beat (hash)
-- ARGV[1] the payload exactly as it stands on the in-progress list
-- ARGV[2] queue name
-- ARGV[3] identity owning KEYS[1]
-- ARGV[4] orphan threshold in seconds; "0" skips the staleness check
--
-- Returns 1 if requeued, 0 if the payload was no longer on the list, -1 if
-- the owner has beaten within the threshold (nothing changed).
local threshold = tonumber(ARGV[4])
if threshold > 0 then
  local beat = tonumber(redis.call("HGET", KEYS[4], ARGV[3]) or "0")
  local now = tonumber(redis.call("TIME")[1])
  if now - beat < threshold then
    return -1
  end
end
if redis.call("LREM", KEYS[1], -1, ARGV[1]) == 0 then
  return 0
end
redis.call("SADD", KEYS[2], ARGV[2])
redis.call("RPUSH", KEYS[3], ARGV[1])
return 1
