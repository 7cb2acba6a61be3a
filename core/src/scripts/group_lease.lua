-- Prepended (after wake.lua and group.lua, whose enter_ring it uses) to
-- the scripts that end a capped group's leases (see
-- groups.rs): group_release.lua (a process settled the jobs) and
-- group_sweep.lua (their in-progress entries are gone: settled, or
-- recovered from a dead process, before their release was written).
--
-- A fetch that takes a job of a group with a concurrency cap records a
-- lease ("<identity> <token>" -> group, in NS:group_leases:<q>) and counts
-- it (NS:group_running:<q>), in the step that records the job in
-- progress; a group at its cap is parked (out of the ring, into
-- NS:group_parked:<q>), so no fetch polls it and no slot waits for it.
-- Ending a lease counts it off once (HDEL says whether it was still
-- there) and moves a parked group back into the ring at its lowest score,
-- its turn next, waking the queue's idle workers.
--
-- A sequence's job filed to retry (fail.lua) turns its lease into a hold
-- on its key (NS:group_holds:<q>: jid -> "<group>\n<the retry entry>"),
-- still counted as running, so the key's next job waits for the retry;
-- a hold ends as a lease does (this function, with the holds and the jid):
-- when requeue_due.lua puts the retry back at the head of its group, or
-- when a sweep finds its retry entry gone.
local function end_group_lease(leases, field, running, parked, ring, group, channel, queue)
  if redis.call("HDEL", leases, field) == 0 then
    return false
  end
  if redis.call("HINCRBY", running, group, -1) <= 0 then
    redis.call("HDEL", running, group)
  end
  if redis.call("SREM", parked, group) == 1 then
    enter_ring(ring, group)
    redis.call("PUBLISH", channel, queue)
  end
  return true
end
