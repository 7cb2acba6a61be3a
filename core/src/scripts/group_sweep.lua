-- Fragments (prepended, in this order): wake.lua, group.lua, group_lease.lua
-- End the leases of a queue's capped groups whose jobs are no longer in
-- progress where their fetch recorded them: settled by a process that died
-- before it ended the lease, or recovered from a dead process (see
-- group_lease.lua, prepended). Run by every worker serving the queue at
-- each orphan check; a lease ended already by its process is not there.
--
-- KEYS[1] NS:group_leases:<q> (hash: "<identity> <token>" -> group)
-- KEYS[2] NS:group_running:<q> (hash)
-- KEYS[3] NS:group_parked:<q> (set)
-- KEYS[4] NS:groups:<q> (the ring)
-- KEYS[5] NS:group_holds:<q> (hash: a sequence's groups held for a failed
--         job's retry, jid -> "<group>\n<the retry entry>", fail.lua)
-- KEYS[6] NS:retry (zset)
-- ARGV[1] the wake channel (NS:wake)
-- ARGV[2] the queue's name
-- ARGV[3] the in-progress hashes' prefix (NS:in_progress:), the identity
--         following
-- ARGV[4] "1" to leave the holds (sharded by queue, where the retry set
--         is on another slot: group_leases.rs sweeps them), else ""
--
-- A hold whose retry entry is no longer in NS:retry (deleted, or killed
-- into dead, by hand: its requeue would have ended the hold in the same
-- step) is ended too, so its group runs on.
--
-- Returns the number of leases and holds ended.
local leases = redis.call("HGETALL", KEYS[1])
local ended = 0
for i = 1, #leases, 2 do
  local field, group = leases[i], leases[i + 1]
  local identity, token = string.match(field, "^(.*) (%d+)$")
  local held = identity and redis.call("HEXISTS", ARGV[3] .. identity, token) == 1
  if not held and end_group_lease(KEYS[1], field, KEYS[2], KEYS[3], KEYS[4], group, ARGV[1], ARGV[2]) then
    ended = ended + 1
  end
end
if ARGV[4] == "1" then
  return ended
end
local holds = redis.call("HGETALL", KEYS[5])
for i = 1, #holds, 2 do
  local jid, held = holds[i], holds[i + 1]
  local group, entry = string.match(held, "^([^\n]*)\n(.*)$")
  local waiting = entry and redis.call("ZSCORE", KEYS[6], entry)
  if not waiting and end_group_lease(KEYS[5], jid, KEYS[2], KEYS[3], KEYS[4], group or "", ARGV[1], ARGV[2]) then
    ended = ended + 1
  end
end
return ended
