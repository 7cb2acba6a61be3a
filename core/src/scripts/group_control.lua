-- Fragments (prepended, in this order): wake.lua, group.lua
-- Pause, resume, weigh, cap or rate one group of a queue (see groups.rs),
-- in one atomic step.
--
-- A paused group stays in its queue's ring at score +inf: a fetch, which
-- reads the lowest scores, never reaches it while another group has a
-- turn to take, and a push that finds its list empty does not move it
-- (its entry exists). Resumed, it takes the ring's lowest score if it has
-- jobs (its turn comes next, as a group that gets jobs again) and the
-- queue's idle workers are woken; without jobs it leaves the ring. The
-- ring always holds "" (the queue's ungrouped jobs) when it exists.
--
-- A group's weight is a field of the queue's weights hash: a fetch adds
-- 1/weight per job taken to its score, so a group of weight 3 has three
-- turns for another's one. The first weight of a queue lists it in the
-- registry ("group-weights <queue>", said on the wake channel), which is
-- how workers learn to read the hash; a queue without weights costs a
-- fetch nothing more.
--
-- A group's concurrency cap is a field of the queue's caps hash (field
-- "": every group's default): a fetch takes no more of its jobs than leave
-- it within the cap, and parks it at its cap (see group_lease.lua). The
-- first cap of a queue lists it ("group-caps <queue>") as weights are
-- listed. A changed cap may leave room: every parked group of the queue
-- takes its turn again (one still at its cap is parked again by the next
-- fetch).
--
-- KEYS[1]   NS:groups:<q> (zset, the ring)
-- KEYS[2]   NS:priorities (set, the registry; see list_priority_level in
--           wake.lua, prepended), or KEYS[1] again sharded by queue: the
--           registry is on the namespace's slot, where the caller lists
--           the queue first (list_queues.lua)
-- KEYS[3]   NS:group_weights:<q> (hash: group -> weight)
-- KEYS[4]   NS:group_caps:<q> (hash: group -> cap)
-- A group's rate (its jobs started per period) is a field of the queue's
-- rates hash ("<limit> <period>"; field "": every group's default), read
-- by a fetch before the rate its jobs declare. The first lists the queue
-- ("group-rates <queue>"). A changed rate may leave room: every group
-- waiting out its period takes its turn again (one still out of its rate
-- waits again).
--
-- KEYS[5]   NS:group_parked:<q> (set)
-- KEYS[6]   NS:group_rates:<q> (hash: group -> "<limit> <period>")
-- KEYS[7]   NS:group_timers:<q> (zset: groups waiting out their period)
-- ARGV[1]   "pause", "resume", "weight", "cap" or "rate"
-- ARGV[2]   the group ("" with "cap": every group's default)
-- ARGV[3]   the wake channel (NS:wake)
-- ARGV[4]   the queue's name
-- ARGV[5]   "weight": the weight (a number > 0), or "" for the default (1);
--           "cap": the cap (a whole number >= 1), or "" for none;
--           "rate": "<limit> <period> <kind>" (0 window, 1 bucket, 2
--           leaky), or "" for none
-- ARGV[5..] "resume": the group's list at each priority level
--
-- Returns 1 when the group's state changed, 0 when it already was so.
local ring, mode, group, channel, queue = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local registry = KEYS[2] ~= KEYS[1] and KEYS[2] or ""

if mode == "pause" then
  if redis.call("ZSCORE", ring, group) == "inf" then
    return 0
  end
  redis.call("ZADD", ring, "NX", lowest_turn(ring), "")
  redis.call("ZADD", ring, "inf", group)
  list_priority_level(registry, channel, "group " .. queue)
  return 1
elseif mode == "resume" then
  if redis.call("ZSCORE", ring, group) ~= "inf" then
    return 0
  end
  if redis.call("EXISTS", unpack(ARGV, 5)) > 0 then
    redis.call("ZADD", ring, "XX", lowest_turn(ring), group)
    redis.call("PUBLISH", channel, queue)
  else
    redis.call("ZREM", ring, group)
  end
  return 1
elseif mode == "cap" or mode == "rate" then
  -- The limit set or cleared; the groups it held off the turns (parked at
  -- their cap, or waiting out their rate's period) take their turn again.
  local limits, held = KEYS[4], redis.call("SMEMBERS", KEYS[5])
  if mode == "rate" then
    limits, held = KEYS[6], redis.call("ZRANGE", KEYS[7], 0, -1)
  end
  if ARGV[5] == "" then
    redis.call("HDEL", limits, group)
  else
    redis.call("HSET", limits, group, ARGV[5])
    list_priority_level(registry, channel, "group-" .. mode .. "s " .. queue)
  end
  if #held > 0 then
    for _, g in ipairs(held) do
      enter_ring(ring, g)
    end
    redis.call("DEL", mode == "rate" and KEYS[7] or KEYS[5])
    redis.call("PUBLISH", channel, queue)
  end
  return 1
elseif mode == "weight" then
  if ARGV[5] == "" then
    return redis.call("HDEL", KEYS[3], group)
  end
  redis.call("HSET", KEYS[3], group, ARGV[5])
  list_priority_level(registry, channel, "group-weights " .. queue)
  return 1
end
return redis.error_reply("ERR unknown mode " .. tostring(mode))
