-- Fragments: none
-- A sequence's failed job, filed to retry (fail.lua), holds its group: its
-- lease becomes a hold on the group's one place, so no later job of the
-- key starts before the retry (see groups.rs, "sequence"). The group stays
-- at its cap (parked by the next fetch that meets it) until requeue_due.lua
-- puts the retry back at the head of its group's list and ends the hold,
-- or a sweep (group_sweep.lua) finds the retry entry gone (deleted, or
-- killed into dead by hand) and ends it.
--
-- KEYS[1] NS:group_leases:<q> (hash: "<identity> <token>" -> group)
-- KEYS[2] NS:group_holds:<q> (hash: jid -> "<group>\n<the retry entry>")
-- ARGV[1] the lease's field ("<identity> <token>")
-- ARGV[2] the job's jid
-- ARGV[3] its group
-- ARGV[4] its entry as filed in NS:retry
--
-- Returns 1 when the lease became a hold, 0 when it was ended already (a
-- sweep came first: the next job may have started).
if redis.call("HDEL", KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call("HSET", KEYS[2], ARGV[2], ARGV[3] .. "\n" .. ARGV[4])
return 1
