-- Fragments (prepended, in this order): wake.lua, group.lua, group_lease.lua
-- Sharded by queue: a sequence's hold on its key, on the queue's slot
-- (see group_leases.rs). On one slot fail.lua turns the lease of a job it
-- files to retry into a hold in the same step; sharded, the retry set is
-- on the namespace's slot, so the hold is taken first, here ("take"),
-- then the job is filed, then its in-progress entry taken off. A hold
-- whose job is in none of those places any more (in progress, in retry,
-- in the outbox on its way back) is ended by the sweep ("end"), only if
-- it is still the hold the sweep read: a later failure of the same job
-- holds its key anew.
--
-- KEYS[1] {N:<q>}:group_leases (hash: "<identity> <token>" -> group)
-- KEYS[2] {N:<q>}:group_holds (hash: jid -> "<group>\n<the retry
--         entry>\n<identity> <token>", the in-progress entry it was filed
--         from last, for the sweep)
-- KEYS[3] {N:<q>}:group_running (hash), KEYS[4] {N:<q>}:group_parked
--         (set), KEYS[5] {N:<q>}:groups (the ring)
-- ARGV[1] "take" or "end"
-- ARGV[2] the job's jid
-- ARGV[3] the hold's value (see KEYS[2])
-- ARGV[4] take: the lease's field ("<identity> <token>"); end: the
--         group
-- ARGV[5] end: the wake channel (NS:wake), ARGV[6] the queue's name
--
-- Returns 1 when the job holds its key now (take: its lease became the
-- hold, or a repeat finds the hold taken) or the hold ended (end), else 0
-- (take: the lease was ended already, by a sweep; end: the hold changed
-- or is gone).
if ARGV[1] == "take" then
  if redis.call("HDEL", KEYS[1], ARGV[4]) == 1 then
    redis.call("HSET", KEYS[2], ARGV[2], ARGV[3])
    return 1
  end
  return redis.call("HGET", KEYS[2], ARGV[2]) == ARGV[3] and 1 or 0
end
if redis.call("HGET", KEYS[2], ARGV[2]) ~= ARGV[3] then
  return 0
end
local ended = end_group_lease(KEYS[2], ARGV[2], KEYS[3], KEYS[4], KEYS[5], ARGV[4], ARGV[5], ARGV[6])
return ended and 1 or 0
