-- Fragments (prepended, in this order): clock.lua, wake.lua, group.lua
-- Reliable fetch: move up to ARGV[1] jobs from the queues, tried in the given
-- order, into this process's in-progress hash, skipping paused queues. One
-- round trip for a whole batch, and a cost that does not grow with the
-- number of queues or jobs: the paused set is read once, LMPOP takes from
-- the first non-empty queue of the list in one command, and one HSET
-- records what it took. So an idle worker's poll of 200 queues is three
-- commands, and a full batch of jobs about three. On a server without LMPOP
-- (Redis 6.2) each job is taken with RPOP.
--
-- A grouped queue (see groups.rs) is taken from round-robin across its
-- groups: its ring (a sorted set of the groups that have jobs, scored by
-- the turns each has had) gives the groups with the fewest turns, up to
-- a quantum of jobs are taken from each (more from each when there are
-- fewer groups than jobs wanted, so a lone group gets every slot), and one
-- ZADD adds what each gave to its score. The caller sizes the quantum to
-- its jobs (read_ahead.rs): one job where they are long, so its slots
-- spread over the groups; many where they are short, so a fetch pops from
-- one or two groups, not one per few jobs. A group found empty leaves the
-- ring (ZREM); its lists are gone already. The ring's member "" is the queue's ungrouped
-- jobs, which take turns as one group; it leaves only with the last group.
-- A grouped queue whose ring is gone is read as an ungrouped one. So a
-- fetch from a grouped queue costs a ZRANGE and a ZADD per round and one
-- pop per group it takes from, however many groups have jobs.
--
-- KEYS[1]   NS:paused_queues (set)
-- KEYS[2]   NS:in_progress:<identity> (hash: delivery token -> payload)
-- KEYS[3..] the lists to read, in the order to try them: each queue's lists
--           (NS:queue:<q>, and NS:queue@<level>:<q> for each priority level
--           in use, highest level first: see priority.rs)
-- ARGV[1]   the most jobs to move (integer >= 1)
-- ARGV[2]   the first delivery token: the i-th job taken (from 0) is
--           recorded under field ARGV[2] + i, tokens the caller reserved;
--           "-" to record nothing (basic fetch's turn of grouped queues)
-- ARGV[3..2+#KEYS-2] the queue name of each list, aligned with KEYS[3..]
-- ARGV[..]  then, per grouped queue (those the registry lists as grouped,
--           see groups.rs), 17 values: its name, its ring (NS:groups:<q>),
--           the levels in use (a bit per level, as the caller knows them),
--           its weights hash (NS:group_weights:<q>) or "" when the registry
--           lists none for it; its caps hash (NS:group_caps:<q>), running
--           counts (NS:group_running:<q>), leases (NS:group_leases:<q>),
--           parked set (NS:group_parked:<q>), this process's identity and
--           the limits its jobs declare (NS:group_declared:<q>, see
--           group.lua), or five "" and the declared limits (or "" when the
--           registry lists no rate for it either) when the registry lists
--           no cap for it (see group_lease.lua); the prefix of its rated
--           groups' window counts (NS:group_rate:<q> , the group following:
--           how many of its jobs started in the current period, expiring
--           with it), its timers (NS:group_timers:<q>: groups waiting out
--           their period, scored by its end), this host's clock (epoch
--           seconds, where TIME is refused) and the rates set through the
--           API (NS:group_rates:<q>: group -> "<limit> <period>", field ""
--           every group's default), or four "" when the registry lists no
--           rate for it; the two parts of the prefix of its groups' lists
--           (NS:group and :<q> , or {NS:<q>}:group and " " sharded by
--           queue: the prefix at level L is the first, "@L" unless L is
--           the default level 5, and the second; a group's list is the
--           prefix followed by the group; built here, where passing the
--           ten prefixes cost a fetch more than its ring did). A group's
--           lists at the levels in use are read; one that seems empty is
--           checked at every level before it leaves the ring, so a level
--           the caller has not heard of yet strands nothing; and the most
--           jobs one group gives in one turn (its quantum, an integer >= 1).
--
-- Returns a flat array {queue_name, payload, queue_name, payload, ...}, in
-- token order (empty when every unpaused queue is empty).
local wanted = tonumber(ARGV[1])
local first_token = tonumber(ARGV[2])
local paused = {}
for _, name in ipairs(redis.call("SMEMBERS", KEYS[1])) do
  paused[name] = true
end

-- The prefix of a grouped queue's group lists at priority `level`.
local function level_prefix(head, tail, level)
  if level == 5 then
    return head .. tail
  end
  return head .. "@" .. level .. tail
end

-- The lists of `group` of `queue` at every level, highest first (to check
-- a group that seems empty at the levels in use).
local function every_list(queue, group)
  local lists = {}
  for level = 9, 0, -1 do
    lists[#lists + 1] = level_prefix(queue.head, queue.tail, level) .. group
  end
  return lists
end

local grouped = {}
for at = #KEYS + 1, #ARGV, 17 do
  local used = tonumber(ARGV[at + 2])
  local head, tail = ARGV[at + 14], ARGV[at + 15]
  local in_use = {}
  for level = 9, 0, -1 do
    -- The default level (5) is always read.
    if level == 5 or math.floor(used / 2 ^ level) % 2 == 1 then
      in_use[#in_use + 1] = level_prefix(head, tail, level)
    end
  end
  grouped[ARGV[at]] = {
    ring = ARGV[at + 1],
    weights = ARGV[at + 3],
    -- Caps are kept only where jobs are recorded in progress (leases
    -- name their entries): not by basic fetch.
    caps = first_token and ARGV[at + 4] or "",
    running = ARGV[at + 5],
    leases = ARGV[at + 6],
    parked = ARGV[at + 7],
    identity = ARGV[at + 8],
    declared = ARGV[at + 9],
    rate_prefix = ARGV[at + 10],
    timers = ARGV[at + 11],
    clock = ARGV[at + 12],
    rates = ARGV[at + 13],
    -- A group that gives more waits longer for its next turn: its score
    -- counts every job.
    quantum = math.max(1, tonumber(ARGV[at + 16]) or 1),
    head = head,
    tail = tail,
    in_use = in_use,
    lists = {},
  }
end

-- The queues in order, as runs of ungrouped lists (read by one LMPOP each)
-- and grouped queues (read through their rings).
local runs, name_of = {}, {}
for i = 3, #KEYS do
  local name = ARGV[i]
  name_of[KEYS[i]] = name
  if not paused[name] then
    local group = grouped[name]
    if group then
      if #group.lists == 0 then
        runs[#runs + 1] = { grouped = name }
      end
      group.lists[#group.lists + 1] = KEYS[i]
    else
      local last = runs[#runs]
      if not last or last.grouped then
        last = { lists = {} }
        runs[#runs + 1] = last
      end
      last.lists[#last.lists + 1] = KEYS[i]
    end
  end
end

local taken = {}
local count = 0

-- Jobs popped from list `key` (of queue `name`, or a queue's list).
local function took(key, name, jobs)
  for _, job in ipairs(jobs) do
    taken[#taken + 1] = name_of[key] or name
    taken[#taken + 1] = job
  end
  count = count + #jobs
end

-- What was taken, recorded in progress with one HSET per 500 jobs
-- (bounded: Lua's unpack has a stack limit), the i-th under token
-- first_token + i.
local function record()
  if not first_token then
    return
  end
  for first = 1, count, 500 do
    local fields = {}
    for i = first, math.min(first + 499, count) do
      fields[#fields + 1] = string.format("%d", first_token + i - 1)
      fields[#fields + 1] = taken[2 * i]
    end
    redis.call("HSET", KEYS[2], unpack(fields))
  end
end

-- Up to `most` jobs from the one list `key` (of queue `name`): RPOP with
-- a count, LMPOP's cheaper twin (Redis >= 6.2, as LMPOP needs 7). Returns
-- how many.
local function pop_list(key, most, name)
  local jobs = redis.call("RPOP", key, most)
  if not jobs then
    return 0
  end
  took(key, name, jobs)
  return #jobs
end

-- Up to `most` jobs from `lists`, tried in order (a group's lists are of
-- queue `name`); returns how many. Redis 6.2 has no LMPOP: one RPOP per
-- job there.
local has_lmpop = true
local function take_from(lists, most, name)
  if #lists == 1 and has_lmpop then
    return pop_list(lists[1], most, name)
  end
  local before = count
  local limit = count + most
  while count < limit and #lists > 0 do
    if has_lmpop then
      local command = { "LMPOP", #lists }
      for _, key in ipairs(lists) do
        command[#command + 1] = key
      end
      command[#command + 1] = "RIGHT"
      command[#command + 1] = "COUNT"
      command[#command + 1] = limit - count
      local popped = redis.pcall(unpack(command))
      if type(popped) == "table" and popped.err then
        if count > 0 then
          -- What was taken is recorded: recovery gives it back.
          record()
          error(popped)
        end
        has_lmpop = false
      elseif not popped then
        break
      else
        took(popped[1], name, popped[2])
      end
    else
      local any = false
      for _, key in ipairs(lists) do
        while count < limit do
          local job = redis.call("RPOP", key)
          if not job then
            break
          end
          took(key, name, { job })
          any = true
        end
      end
      if not any or count >= limit then
        break
      end
    end
  end
  return count - before
end

-- The lists of `group` under each of `prefixes`.
local function group_lists(prefixes, group)
  local lists = {}
  for _, prefix in ipairs(prefixes) do
    lists[#lists + 1] = prefix .. group
  end
  return lists
end

-- The groups among the first `live` members of `ring` (a flat {member,
-- score, ...} array): every member but "".
local function groups_in(ring, live)
  local groups = {}
  for m = 1, live do
    if ring[2 * m - 1] ~= "" then
      groups[#groups + 1] = ring[2 * m - 1]
    end
  end
  return groups
end

-- What hash `key` holds for each of `groups`, as `read` makes it out
-- (nil: nothing): group -> value; nothing is read where the queue has no
-- such hash (`key` "").
local function fields_of(key, groups, read)
  local found = {}
  if key == "" or #groups == 0 then
    return found
  end
  local values = redis.call("HMGET", key, unpack(groups))
  for i, group in ipairs(groups) do
    found[group] = values[i] and read(values[i])
  end
  return found
end

-- The weights of `groups`, where the queue has any: group -> weight.
local function weights_of(queue, groups)
  return fields_of(queue.weights, groups, function(value)
    local w = tonumber(value)
    return w and w > 0 and w or nil
  end)
end

-- The limits `groups` declare (group.lua: "<cap> <rate> <period> <backlog>
-- <drop> <rate kind>", 0 for none), where the queue has caps or rates:
-- group -> {cap, rate, period, rate kind}.
local function declared_of(queue, groups)
  return fields_of(queue.declared, groups, function(value)
    local cap, rate, period = string.match(value, "^(%S+) (%S+) (%S+)")
    local kind = string.match(value, "^%S+ %S+ %S+ %S+ %S+ (%d)")
    return { tonumber(cap) or 0, tonumber(rate) or 0, tonumber(period) or 0, tonumber(kind) or 0 }
  end)
end

-- The concurrency caps of `groups`, where the queue has any (a group's
-- own, else the one its jobs declare, else the queue's default under
-- field ""), and how many of each run now: group -> cap, group -> running.
local function caps_of(queue, groups, declared)
  local cap, running = {}, {}
  if queue.caps == "" or #groups == 0 then
    return cap, running
  end
  local caps = redis.call("HMGET", queue.caps, "", unpack(groups))
  local counts = redis.call("HMGET", queue.running, unpack(groups))
  for i, group in ipairs(groups) do
    local own = declared[group] and declared[group][1] > 0 and declared[group][1]
    local c = tonumber(caps[i + 1]) or own or tonumber(caps[1])
    if c then
      cap[group] = c
      running[group] = tonumber(counts[i]) or 0
    end
  end
  return cap, running
end

-- The time, read once per fetch of `queue` (its rates and timers use it).
local function now_of(queue)
  queue.now = queue.now or now_or(queue.clock)
  return queue.now
end

-- The rate of each of `groups` (one set through the API for it, else the
-- one its jobs declare, else the API's default for every group): group ->
-- {limit, period, kind} (kind: 0 window, 1 bucket, 2 leaky; a rate set
-- through the API counts by window).
local function rate_limits_of(queue, groups, declared)
  local rate = {}
  for _, group in ipairs(groups) do
    if declared[group] and declared[group][2] > 0 then
      rate[group] = { declared[group][2], declared[group][3], declared[group][4] }
    end
  end
  if queue.rates == "" or #groups == 0 then
    return rate
  end
  local set = redis.call("HMGET", queue.rates, "", unpack(groups))
  local function read(value)
    local limit, period, kind = string.match(value or "", "^(%S+) (%S+) ?(%d?)$")
    limit, period = tonumber(limit), tonumber(period)
    return limit and period and { limit, period, tonumber(kind) or 0 } or nil
  end
  local default = read(set[1])
  for i, group in ipairs(groups) do
    rate[group] = read(set[i + 1]) or rate[group] or default
  end
  return rate
end

-- How many more jobs each rated group of `groups` may start now: group ->
-- room (and its rate's key, its rate, and how it stands: a window's count,
-- a bucket's tokens, a leaky rate's next start). A group's rate key
-- (NS:group_rate:<q> <group>) holds, by the rate's kind:
--   window: how many started in the period that began with the first of
--           them (expiring with it): room is the limit less that;
--   bucket: "<tokens> <when>": the tokens left at that time, refilled at
--           limit per period up to limit (expiring once full): room is the
--           whole tokens now;
--   leaky:  when the next job may start (epoch seconds, expiring then):
--           room is 1 from then, one job every period / limit.
local function rates_of(queue, groups, declared)
  local room, window, level = {}, {}, {}
  if queue.rate_prefix == "" then
    return room, window, {}, level
  end
  local rate = rate_limits_of(queue, groups, declared)
  local rated = {}
  for _, group in ipairs(groups) do
    if rate[group] then
      rated[#rated + 1] = group
      window[group] = queue.rate_prefix .. group
    end
  end
  if #rated == 0 then
    return room, window, rate, level
  end
  local keys = {}
  for i, group in ipairs(rated) do
    keys[i] = window[group]
  end
  local states = redis.call("MGET", unpack(keys))
  for i, group in ipairs(rated) do
    local limit, period, kind = rate[group][1], rate[group][2], rate[group][3]
    if kind == 1 then
      local now = now_of(queue)
      local tokens, at = string.match(states[i] or "", "^(%S+) (%S+)$")
      tokens, at = tonumber(tokens), tonumber(at)
      local full = tokens and math.min(limit, tokens + math.max(0, now - at) * limit / period) or limit
      level[group] = full
      room[group] = math.floor(full)
    elseif kind == 2 then
      local now = now_of(queue)
      local next_start = tonumber(states[i]) or 0
      level[group] = next_start
      room[group] = next_start <= now and 1 or 0
    else
      room[group] = limit - (tonumber(states[i]) or 0)
    end
  end
  return room, window, rate, level
end

-- Counts `got` jobs started by a rated group whose rate key is `window`,
-- its rate {limit, period, kind} and its standing `level` (see rates_of).
-- A window begins with its first job (the count expires with it).
local function count_started(queue, window, rate, level, got)
  local limit, period, kind = rate[1], rate[2], rate[3]
  if kind == 1 then
    local now = now_of(queue)
    local tokens = level - got
    -- Full again (and so nothing to keep) once refilled.
    local refill = (limit - tokens) * period / limit
    redis.call("SET", window, string.format("%.6f %.6f", tokens, now), "PX", math.max(1, math.ceil(refill * 1000)))
  elseif kind == 2 then
    local now = now_of(queue)
    local next_start = math.max(now, level) + got * period / limit
    redis.call("SET", window, string.format("%.6f", next_start), "PX", math.max(1, math.ceil((next_start - now) * 1000)))
  elseif redis.call("INCRBY", window, got) == got then
    redis.call("PEXPIRE", window, math.max(1, math.ceil(period * 1000)))
  end
end

-- How long until a rated group out of its rate may start a job again
-- (seconds): its window's end, its bucket's next token, or its next start.
local function rate_wait(queue, window, rate, level)
  local limit, period, kind = rate[1], rate[2], rate[3]
  if kind == 1 then
    return math.max(0.001, (1 - level) * period / limit)
  elseif kind == 2 then
    return math.max(0.001, level - now_of(queue))
  end
  return math.max(redis.call("PTTL", window), 1) / 1000
end

-- Groups of `queue` whose period has ended come back into its ring, at
-- its lowest score (a group without jobs is dropped by the next round).
local function wake_timers(queue)
  if queue.timers == "" then
    return
  end
  local due = redis.call("ZRANGEBYSCORE", queue.timers, "-inf", now_of(queue), "LIMIT", 0, 100)
  if #due == 0 then
    return
  end
  redis.call("ZREM", queue.timers, unpack(due))
  for _, group in ipairs(due) do
    enter_ring(queue.ring, group)
  end
end

-- A grouped queue: rounds of a quantum of jobs (or an even share) from each of the
-- groups with the fewest turns, at most a few rounds per fetch. A group
-- adds 1/weight to its score per job taken; a paused one sits at +inf
-- (group_control.lua), past every group with a turn to take.
local function take_grouped(name)
  local queue = grouped[name]
  wake_timers(queue)
  for _ = 1, 4 do
    local need = wanted - count
    if need <= 0 then
      return
    end
    -- Twice the members the quantum needs, at most one per job wanted:
    -- those with fewer jobs than the quantum leave the rest to the ones
    -- after them, in this round. Where caps or rates may hold a group to
    -- fewer, one member per job wanted.
    local reading = need
    if queue.caps == "" and queue.rate_prefix == "" then
      reading = math.min(need, 2 * math.ceil(need / queue.quantum))
    end
    local ring = redis.call("ZRANGE", queue.ring, 0, reading - 1, "WITHSCORES")
    local members = #ring / 2
    if members == 0 then
      take_from(queue.lists, need, name)
      return
    end
    -- The members with a turn to take (a paused group's score is +inf,
    -- so they come first).
    local live = 0
    while live < members and ring[2 * live + 2] ~= "inf" do
      live = live + 1
    end
    if live == 0 then
      return
    end
    local groups = groups_in(ring, live)
    local weight = weights_of(queue, groups)
    local declared = declared_of(queue, groups)
    local cap, running = caps_of(queue, groups, declared)
    local room, window, rate, level = rates_of(queue, groups, declared)
    local turns, gone, parked, leases, empty, waiting = {}, {}, {}, {}, {}, {}
    local gave, passed = false, false
    for m = 1, live do
      if count >= wanted then
        break
      end
      -- An even share of what is still wanted among the members left, so
      -- one that has fewer jobs leaves the rest to those after it.
      local share = math.max(math.ceil((wanted - count) / (live - m + 1)), math.min(queue.quantum, wanted - count))
      local group, score = ring[2 * m - 1], tonumber(ring[2 * m])
      local before = count
      if cap[group] then
        -- At most its cap running: room for the rest, or parked.
        share = math.min(share, cap[group] - running[group])
      end
      -- Out of its rate with jobs waiting (one without any leaves the ring).
      local out_of_rate = room[group]
        and room[group] <= 0
        and redis.call("EXISTS", unpack(every_list(queue, group))) > 0
      if room[group] then
        -- At most its rate's room this period: the rest wait out the period.
        share = math.min(share, room[group])
      end
      local got
      if out_of_rate then
        got = -2
      elseif room[group] and room[group] <= 0 then
        got = 0
      elseif share <= 0 then
        got = -1
      elseif group == "" then
        got = take_from(queue.lists, share, name)
      elseif #queue.in_use == 1 then
        -- The usual case, one level in use: one RPOP, no list of lists.
        got = pop_list(queue.in_use[1] .. group, share, name)
      else
        got = take_from(group_lists(queue.in_use, group), share, name)
      end
      if got == 0 and group ~= "" and #queue.in_use < 10 then
        local all = every_list(queue, group)
        if redis.call("EXISTS", unpack(all)) > 0 then
          got = take_from(all, share, name)
        end
      end
      if got > 0 and room[group] then
        count_started(queue, window[group], rate[group], level[group], got)
      end
      if got > 0 and cap[group] then
        redis.call("HINCRBY", queue.running, group, got)
        for i = before + 1, count do
          leases[#leases + 1] = queue.identity .. " " .. string.format("%d", first_token + i - 1)
          leases[#leases + 1] = group
        end
      end
      if got == -2 then
        -- Out of its rate: it waits out its period (its timer), off the ring.
        waiting[#waiting + 1] = now_of(queue) + rate_wait(queue, window[group], rate[group], level[group])
        waiting[#waiting + 1] = group
      elseif got < 0 then
        parked[#parked + 1] = group
      elseif got > 0 then
        gave = true
        turns[#turns + 1] = score + got / (weight[group] or 1)
        turns[#turns + 1] = group
      elseif group ~= "" then
        -- Every list of the group is empty (and so gone).
        gone[#gone + 1] = group
        empty[#empty + 1] = group
      elseif members > 1 or (need == 1 and redis.call("ZCARD", queue.ring) > 1) then
        -- No ungrouped jobs: "" stays while a group is in the ring, its
        -- turn passed (counted as taken, so it is not asked every fetch).
        turns[#turns + 1] = score + share
        turns[#turns + 1] = group
        passed = true
      else
        gone[#gone + 1] = group
      end
    end
    -- Empty and parked groups leave the ring; parked ones wait in the
    -- queue's parked set.
    if #parked > 0 then
      redis.call("SADD", queue.parked, unpack(parked))
    end
    for _, group in ipairs(parked) do
      gone[#gone + 1] = group
    end
    if #waiting > 0 then
      redis.call("ZADD", queue.timers, unpack(waiting))
      for i = 2, #waiting, 2 do
        gone[#gone + 1] = waiting[i]
      end
    end
    if #gone > 0 then
      redis.call("ZREM", queue.ring, unpack(gone))
    end
    if #empty > 0 and queue.declared ~= "" then
      -- A group without jobs keeps no declared cap: its next push
      -- declares one again (group.lua).
      redis.call("HDEL", queue.declared, unpack(empty))
    end
    if #leases > 0 then
      redis.call("HSET", queue.leases, unpack(leases))
    end
    if #turns > 0 then
      redis.call("ZADD", queue.ring, unpack(turns))
    end
    -- Another round when this one took jobs, or passed over members that
    -- had none (the next round reads the members after them).
    if not gave and not passed and #gone == 0 then
      return
    end
  end
end

for _, run in ipairs(runs) do
  if count >= wanted then
    break
  end
  if run.grouped then
    take_grouped(run.grouped)
  else
    take_from(run.lists, wanted - count, nil)
  end
end
record()
return taken
