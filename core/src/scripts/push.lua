-- Fragments (prepended, in this order): wake.lua, group.lua
-- Push jobs, in one atomic step: the immediate ones onto their queues (and
-- each queue's name into NS:queues), the future ones into the schedule, and
-- the `queued`/`scheduled` result records of those that keep their result.
-- A push that finds a queue empty publishes the queue's name on the wake
-- channel (wake.lua, prepended), so idle workers fetch at once; a queue
-- that already held jobs publishes nothing.
--
-- The priority levels the jobs use (other than the default) are listed
-- first, for workers to find their lists (list_priority_level, wake.lua).
-- A list of a group that was empty enters the group in its queue's ring
-- (enter_group, group.lua), which also keeps the limits the jobs declare
-- for their group.
--
-- KEYS[1]         NS:queues (set)
-- KEYS[2]         NS:schedule (zset)
-- KEYS[3]         NS:priorities (set)
-- KEYS[4..3+Q]    the lists pushed to: NS:queue:<q>, or NS:queue@<level>:<q>
--                 for a priority level other than the default, or a
--                 group's list (NS:group:<q> <group>, see groups.rs)
-- KEYS[4+Q..3+Q+R] NS:result:<jid>, one per result record
-- KEYS[4+Q+R]     NS:stat:backlog_dropped, then its day's count
--                 (NS:stat:backlog_dropped:<yyyy-mm-dd>): the jobs a group's
--                 backlog cap dropped (trim_backlog, group.lua)
-- ARGV[1]         the wake channel
-- ARGV[2]         Q, the number of lists
-- ARGV[3]         S, the number of scheduled jobs
-- ARGV[4]         R, the number of result records
-- ARGV[5]         P, the number of priority levels used
-- ARGV[6]         B, the number of batches the jobs join; when B > 0,
--                 ARGV[7] is the batch keys' prefix NS:batch:, then B
--                 pairs {batch id, jobs joining}: each batch's total and
--                 pending grow by that many. A batch that does not exist
--                 fails the push before anything is written (error
--                 NOBATCH <id>).
-- ARGV[..]        P levels ("<level> <queue>"); then per list (aligned with
--                 its key): its queue's name, its queue's ring (NS:groups:<q>,
--                 or "" for ungrouped jobs), its group (or ""), its queue's
--                 declared limits (NS:group_declared:<q>) and the limits
--                 the jobs declare for the group (both "" for none), its
--                 job count n, then the n payloads (pushed in that order);
--                 then per scheduled job:
--                 run-at score, payload; then per record: TTL (whole
--                 seconds), record; then, sharded by queue, H (absent: 0)
--                 and H pairs {hand-over id, "<queue>\n<payload>"}: jobs
--                 of a batch, written to the outbox (KEYS[6+Q+R],
--                 NS:outbox, present when H > 0) in the step that counts
--                 them into their batch, for outbox.rs to push onto their
--                 queues' slots (a crash between the two leaves them
--                 there, for recovery: a batch never counts a job that
--                 cannot arrive)
--
-- A list whose group's jobs declare a backlog cap (group.lua) is checked
-- first: a push past it is refused before anything is written (error
-- BACKLOG <waiting> <cap> <group>), or, where the class says so, the
-- group's oldest jobs are dropped to make room.
--
-- Returns the number of jobs written.
local queues, scheduled, records = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local batches = tonumber(ARGV[6] or "0")
local lists_at = (batches > 0 and 8 + 2 * batches or 7) + tonumber(ARGV[5])
for q = 1, queues do
  local refused = backlog_refusal(KEYS[3 + q], ARGV[lists_at + 2], ARGV[lists_at + 4], tonumber(ARGV[lists_at + 5]))
  if refused then
    return refused
  end
  lists_at = lists_at + 6 + tonumber(ARGV[lists_at + 5])
end
local dropped_stat, dropped_day = KEYS[4 + queues + records], KEYS[5 + queues + records]
local at = 7
if batches > 0 then
  local prefix = ARGV[7]
  for b = 0, batches - 1 do
    if redis.call("EXISTS", prefix .. ARGV[8 + 2 * b]) == 0 then
      return redis.error_reply("NOBATCH " .. ARGV[8 + 2 * b])
    end
  end
  for b = 0, batches - 1 do
    local batch, n = prefix .. ARGV[8 + 2 * b], ARGV[9 + 2 * b]
    redis.call("HINCRBY", batch, "total", n)
    redis.call("HINCRBY", batch, "pending", n)
  end
  at = 8 + 2 * batches
end
for _ = 1, tonumber(ARGV[5]) do
  list_priority_level(KEYS[3], ARGV[1], ARGV[at])
  at = at + 1
end
local written = 0
for q = 1, queues do
  local key, name, ring, group = KEYS[3 + q], ARGV[at], ARGV[at + 1], ARGV[at + 2]
  local declared, limits = ARGV[at + 3], ARGV[at + 4]
  local n = tonumber(ARGV[at + 5])
  at = at + 6
  redis.call("SADD", KEYS[1], name)
  local length = 0
  -- Bounded pushes: Lua's unpack has a stack limit.
  for first = at, at + n - 1, 1000 do
    length = redis.call("LPUSH", key, unpack(ARGV, first, math.min(first + 999, at + n - 1)))
  end
  wake_if_was_empty(ARGV[1], name, length, n)
  enter_group(ring, group, declared, limits, length, n, KEYS[3], ARGV[1], name)
  trim_backlog(key, limits, length, dropped_stat, dropped_day)
  at = at + n
  written = written + n
end
for _ = 1, scheduled do
  redis.call("ZADD", KEYS[2], ARGV[at], ARGV[at + 1])
  at = at + 2
  written = written + 1
end
for r = 1, records do
  redis.call("SET", KEYS[3 + queues + r], ARGV[at + 1], "EX", ARGV[at])
  at = at + 2
end
local handed = tonumber(ARGV[at] or "0")
for h = 1, handed do
  redis.call("HSET", KEYS[6 + queues + records], ARGV[at + 2 * h - 1], ARGV[at + 2 * h])
  written = written + 1
end
return written
