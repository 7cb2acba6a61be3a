-- Prepended, after wake.lua, to every script that puts a job on a list
-- or a group in its queue's ring (see groups.rs): the pushes and requeues,
-- group_control.lua, and the scripts that end capped groups' leases.

-- The ring's lowest turn: a group entering there takes the next one ("0"
-- for an empty ring, or one holding only paused groups, at +inf).
local function lowest_turn(ring)
  local lowest = redis.call("ZRANGE", ring, 0, 0, "WITHSCORES")
  if lowest[2] == nil or lowest[2] == "inf" then
    return "0"
  end
  return lowest[2]
end

-- Puts `group` in `ring` at its lowest turn unless it is there (NX: a
-- group in the ring keeps its place), with `""`, the member that stands
-- for the queue's ungrouped jobs (a ring always holds it). Returns how
-- many members were added: 2 when the ring did not exist.
local function enter_ring(ring, group)
  local score = lowest_turn(ring)
  return redis.call("ZADD", ring, "NX", score, group, score, "")
end

-- A job whose class limits its group (`group_cap`, `group_rate`) says so
-- with every push and requeue: `limits` ("<cap> <rate> <period> <backlog>
-- <drop> <rate kind>", 0 for none; the rate kind is 0 window, 1 bucket, 2
-- leaky, absent from older pushes; the backlog is the push's business, see
-- backlog_refusal) goes in its queue's declared limits (the latest push
-- wins) when it has a cap or a rate, read
-- by fetch_reliable.lua (a cap after one set for the group by
-- group_control.lua and before the queue's default) and dropped there when
-- the group has no jobs left (so a group leaves no field behind). The
-- first group to declare a cap or a rate lists its queue as capped
-- (`group-caps <queue>`) or rated (`group-rates <queue>`), which is how
-- workers learn to keep them.
--
-- A push that leaves a group's list with as many jobs as it pushed found
-- the group without jobs at that level: the group enters its queue's ring
-- (a sorted set scored by the turns each group has had) at the ring's
-- lowest score, so its turn comes in the next round and never ahead of a
-- group that has waited longer. A ring that did not exist lists the queue
-- as grouped (list_priority_level, wake.lua), which is how workers learn
-- to read it. Nothing happens for an empty `ring` (a job without a
-- group): such a push pays nothing.
local function enter_group(ring, group, declared, limits, length, pushed, registry, channel, queue_name)
  if ring == nil or ring == "" then
    return
  end
  local cap, rate = string.match(limits or "", "^(%S+) (%S+)")
  local limited = (cap ~= nil and cap ~= "0") or (rate ~= nil and rate ~= "0")
  if limited and declared ~= "" and redis.call("HSET", declared, group, limits) == 1 then
    if cap ~= "0" then
      list_priority_level(registry, channel, "group-caps " .. queue_name)
    end
    if rate ~= "0" then
      list_priority_level(registry, channel, "group-rates " .. queue_name)
    end
  end
  if length ~= pushed then
    return
  end
  if enter_ring(ring, group) == 2 then
    list_priority_level(registry, channel, "group " .. queue_name)
  end
end

-- A group's backlog cap, from the limits its job declares (the 4th and
-- 5th of "<cap> <rate> <period> <backlog> <drop>"): the most of its jobs
-- that may wait on a list, and whether the oldest make room for a push
-- past it (drop_oldest) rather than the push being refused; nil for none.
local function backlog_of(limits)
  local most, drop = string.match(limits or "", "^%S+ %S+ %S+ (%S+) (%S+)")
  most = tonumber(most)
  if not most or most <= 0 then
    return nil
  end
  return most, drop == "1"
end

-- The refusal of a push of `n` jobs of `group` onto `list` past its
-- backlog cap (an error reply, BACKLOG <waiting> <cap> <group>, for the
-- push to return before it writes anything), or nil.
local function backlog_refusal(list, group, limits, n)
  local most, drop = backlog_of(limits)
  if not most or drop then
    return nil
  end
  local waiting = redis.call("LLEN", list)
  if waiting + n > most then
    return redis.error_reply("BACKLOG " .. waiting .. " " .. most .. " " .. group)
  end
  return nil
end

-- After a push that left `list` `length` long, the oldest jobs past its
-- group's backlog cap are dropped (drop_oldest), counted in `stat` and
-- `stat_day`. Returns how many.
local function trim_backlog(list, limits, length, stat, stat_day)
  local most, drop = backlog_of(limits)
  if not most or not drop or length <= most then
    return 0
  end
  local excess = length - most
  redis.call("RPOP", list, excess)
  redis.call("INCRBY", stat, excess)
  redis.call("INCRBY", stat_day, excess)
  return excess
end
