-- Fragments (prepended, in this order): wake.lua
-- Lists the queues (and priority levels of them) that hand-overs are
-- about to push onto (outbox.rs), before the push: the push runs on each
-- queue's slot, which may not be this one (sharded by queue), so the
-- listing comes first and a queued job is always in a listed queue. A
-- crash between the two leaves a listed queue and the outbox entry, which
-- recovery pushes; listing again is harmless.
--
-- KEYS[1]   NS:queues (set)
-- KEYS[2]   NS:priorities (set; see list_priority_level in wake.lua)
-- ARGV[1]   the wake channel (NS:wake), told of a level listed first
-- ARGV[2..] pairs {queue name, "<level> <queue>" or "" for the default}
--
-- Returns the number of queues named.
local named = 0
for i = 2, #ARGV, 2 do
  redis.call("SADD", KEYS[1], ARGV[i])
  list_priority_level(KEYS[2], ARGV[1], ARGV[i + 1])
  named = named + 1
end
return named
