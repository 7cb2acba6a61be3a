-- Fragments (prepended, in this order): wake.lua, group.lua, group_lease.lua
-- End the leases of settled jobs of capped groups (see group_lease.lua,
-- prepended), each at most once: a lease a sweep ended already is skipped.
--
-- KEYS[4i-3..4i] per lease: NS:group_leases:<q> (hash), NS:group_running:<q>
--                (hash), NS:group_parked:<q> (set), NS:groups:<q> (the ring)
-- ARGV[1]        the wake channel (NS:wake)
-- ARGV[3i-1..3i+1] per lease: its field ("<identity> <token>"), its group,
--                its queue's name
--
-- Returns the number of leases ended.
local ended = 0
for i = 1, #KEYS / 4 do
  local k, a = 4 * i - 3, 3 * i - 1
  if end_group_lease(KEYS[k], ARGV[a], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], ARGV[a + 1], ARGV[1], ARGV[a + 2]) then
    ended = ended + 1
  end
end
return ended
