-- Prepended, after wake.lua, to every script that puts a job on a list
-- (see groups.rs).
--
-- A push that leaves a group's list with as many jobs as it pushed found
-- the group without jobs at that level: the group enters its queue's ring
-- (a sorted set scored by the turns each group has had) at the ring's
-- lowest score, so its turn comes in the next round and never ahead of a
-- group that has waited longer; `""`, the member that stands for the
-- queue's ungrouped jobs, enters with it (a ring always holds it). A
-- group already in the ring keeps its place (NX). A ring that did not
-- exist lists the queue as grouped (list_priority_level, wake.lua), which
-- is how workers learn to read it. Nothing happens for an empty `ring`
-- (a job without a group): such a push pays nothing.
local function enter_group_if_was_empty(ring, group, length, pushed, registry, channel, queue_name)
  if ring == nil or ring == "" or length ~= pushed then
    return
  end
  local lowest = redis.call("ZRANGE", ring, 0, 0, "WITHSCORES")
  local score = lowest[2] or "0"
  redis.call("ZADD", ring, "NX", score, group, score, "")
  if lowest[1] == nil then
    list_priority_level(registry, channel, "group " .. queue_name)
  end
end
