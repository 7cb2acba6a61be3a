-- Fragments (prepended, in this order): wake.lua, group.lua
-- Push a unique job: take its lock (`SET NX EX`, value = jid) and push it,
-- in one atomic step. A duplicate (lock held) writes nothing.
--
-- KEYS[1] NS:unique:<digest> (string)
-- KEYS[2] NS:queues (set)
-- KEYS[3] the job's list (NS:queue:<q>, a level's or its group's, see
--         groups.rs) for an immediate job, NS:schedule (zset) for a
--         future one, NS:outbox (hash) for an immediate job sharded by queue
--         (its queue is on another slot: see outbox.rs)
-- ARGV[1] jid
-- ARGV[2] lock TTL (whole seconds)
-- ARGV[3] "queue" | "schedule" | "outbox"
-- ARGV[4] queue name
-- ARGV[5] the job payload
-- ARGV[6] run-at score (epoch seconds; "schedule" only)
-- KEYS[4] NS:result:<jid> (ignored when ARGV[7] is "0" or absent)
-- ARGV[7] result record TTL (whole seconds), "0" for a job without result_ttl
-- ARGV[8] the result record (status queued or scheduled)
-- ARGV[9] the wake channel (NS:wake; see wake.lua, prepended)
-- ARGV[10] the hand-over id ("outbox" only)
-- KEYS[5] NS:priorities (set)
-- ARGV[11] the job's priority level, "<level> <queue>", or "" for the
--          default (see list_priority_level in wake.lua, prepended)
-- ARGV[12] the queue's ring (NS:groups:<q>), or "" for a job without a
--          group (see group.lua, prepended)
-- ARGV[13] the job's group, or ""
-- ARGV[14] the queue's declared limits (NS:group_declared:<q>), or ""
--          when the job declares no limit for its group (group.lua)
-- ARGV[15] the limits it declares, or "" (a backlog cap among them is
--          kept as push.lua keeps it)
-- KEYS[6] NS:stat:backlog_dropped, KEYS[7] its day's count
-- ARGV[16] the batch keys' prefix (NS:batch:) and ARGV[17] the batch the
--          job joins, or both absent: a job that is pushed joins its
--          batch in this step (its total and pending grow by one); a
--          duplicate joins nothing, and a batch that does not exist fails
--          the push before anything is written (error NOBATCH <id>)
--
-- Returns the jid holding the lock: this push's if it was pushed (or
-- already was, under this jid: a repeat counts nothing more), else that
-- of the job holding it.
local owner = redis.call("GET", KEYS[1])
if owner then
  -- This very push already landed (a retry after a lost reply), or
  -- another job holds the lock.
  return owner
end
-- Fail before writing anything if the push would fail.
local want = ({ schedule = "zset", queue = "list", outbox = "hash" })[ARGV[3]]
local kind = redis.call("TYPE", KEYS[3])["ok"]
if kind ~= want and kind ~= "none" then
  return redis.error_reply("WRONGTYPE " .. KEYS[3] .. " is a " .. kind .. ", not a " .. want)
end
if ARGV[3] == "queue" then
  local refused = backlog_refusal(KEYS[3], ARGV[13], ARGV[15], 1)
  if refused then
    return refused
  end
end
local batch = ARGV[17] and ARGV[17] ~= "" and ARGV[16] .. ARGV[17]
if batch then
  if redis.call("EXISTS", batch) == 0 then
    return redis.error_reply("NOBATCH " .. ARGV[17])
  end
  redis.call("HINCRBY", batch, "total", 1)
  redis.call("HINCRBY", batch, "pending", 1)
end
redis.call("SET", KEYS[1], ARGV[1], "EX", ARGV[2])
list_priority_level(KEYS[5], ARGV[9], ARGV[11])
if ARGV[3] == "schedule" then
  redis.call("ZADD", KEYS[3], ARGV[6], ARGV[5])
elseif ARGV[3] == "outbox" then
  redis.call("SADD", KEYS[2], ARGV[4])
  redis.call("HSET", KEYS[3], ARGV[10], ARGV[4] .. "\n" .. ARGV[5])
else
  redis.call("SADD", KEYS[2], ARGV[4])
  local length = redis.call("LPUSH", KEYS[3], ARGV[5])
  wake_if_was_empty(ARGV[9], ARGV[4], length, 1)
  enter_group(ARGV[12], ARGV[13], ARGV[14], ARGV[15], length, 1, KEYS[5], ARGV[9], ARGV[4])
  trim_backlog(KEYS[3], ARGV[15], length, KEYS[6], KEYS[7])
end
if (ARGV[7] or "0") ~= "0" then
  redis.call("SET", KEYS[4], ARGV[8], "EX", ARGV[7])
end
return ARGV[1]
