-- Fragments (prepended, in this order): clock.lua, wake.lua, group.lua
-- Groups of a rated queue whose period has ended come back into its ring
-- (see fetch_reliable.lua, which parks a group out of its rate on the
-- queue's timers), and idle workers are woken for the queue. Run by every
-- process's scheduler each tick for the queues the registry lists as rated,
-- so a group waiting out its period runs when it ends, even when no fetch
-- of the queue comes (a busy queue's fetches wake its due groups first).
--
-- KEYS[1] NS:group_timers:<q> (zset: group -> when its period ends)
-- KEYS[2] NS:groups:<q> (the queue's ring)
-- ARGV[1] the wake channel (see wake.lua)
-- ARGV[2] the queue's name
-- ARGV[3] this host's clock (epoch seconds), where TIME is refused
--
-- Returns how many groups came back.
local due = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", now_or(ARGV[3]), "LIMIT", 0, 100)
if #due == 0 then
  return 0
end
redis.call("ZREM", KEYS[1], unpack(due))
for _, group in ipairs(due) do
  enter_ring(KEYS[2], group)
end
redis.call("PUBLISH", ARGV[1], ARGV[2])
return #due
