-- Fragments (prepended, in this order): wake.lua, group.lua, flow_index.lua
-- Push a throttled job (see flow.rs): the jobs of one class, queue and key
-- are due at least a window apart. KEYS[1] holds when the key's next
-- window opens. A push at or after it is pushed onto its queue now (as
-- push.lua pushes one job) and the next window opens a window later; a
-- push before it is, by the class's choice, delayed (put in the schedule
-- at that time, which moves the next window a window further) or dropped
-- (nothing written but the count of drops).
--
-- KEYS[1] NS:throttle:<digest of class, queue and key> (string: epoch
--         seconds when the key's next window opens; expires once open)
-- KEYS[2] NS:queues (set)
-- KEYS[3] the job's list (NS:queue:<q>, a level's or its group's)
-- KEYS[4] NS:schedule (zset)
-- KEYS[5] NS:priorities (set)
-- KEYS[6] NS:stat:throttled, KEYS[7] NS:stat:throttled:<yyyy-mm-dd>
--         (counters of dropped pushes)
-- KEYS[8] NS:flow_keys (see flow_index.lua)
-- KEYS[9] NS:stat:backlog_dropped, KEYS[10] its day's count (a group's
--         backlog cap among the limits it declares: see group.lua)
-- ARGV[1] the payload
-- ARGV[2] now (epoch seconds, the fleet's clock)
-- ARGV[3] the window (seconds)
-- ARGV[4] "delay" or "drop": what a push before the next window does
-- ARGV[5] the queue's name
-- ARGV[6] the wake channel (see wake.lua)
-- ARGV[7] the job's priority level, "<level> <queue>", or "" (default)
-- ARGV[8..11] its queue's ring, its group, its queue's declared limits and
--         the limits it declares (see enter_group in group.lua; "" for none)
-- ARGV[12] the key's member of NS:flow_keys
-- ARGV[13..18] the status record of a job pushed with result_ttl (see
--         keep_result in flow_index.lua): the prefix of its key
--         (NS:result:, "" for none), the record's head, middle and tail
--         around its jid and due time as scheduled (a delayed push), how
--         long it lasts; and the record's head and rest as queued
-- ARGV[20] this push's jid
-- ARGV[21] sharded by queue, a hand-over id: a job queued now is written
--         to the outbox (KEYS[3] is NS:outbox then, and ARGV[8..11] are
--         "") for outbox.rs to push onto its queue's slot; absent or ""
--         otherwise
--
-- Returns {what happened: "queued" | "delayed" | "dropped", when it is due
-- (epoch seconds, as text)}, or a job queued now past its group's backlog
-- cap refused (BACKLOG, see backlog_refusal in group.lua) with nothing
-- written.
local now, window = tonumber(ARGV[2]), tonumber(ARGV[3])
local opens = tonumber(redis.call("GET", KEYS[1]) or "0") or 0
local due = math.max(now, opens)
if due > now and ARGV[4] == "drop" then
  redis.call("INCR", KEYS[6])
  redis.call("INCR", KEYS[7])
  return { "dropped", string.format("%.6f", opens) }
end
if due <= now then
  local refused = backlog_refusal(KEYS[3], ARGV[9], ARGV[11], 1)
  if refused then
    return refused
  end
end
local following = due + window
redis.call("SET", KEYS[1], string.format("%.6f", following), "EX", math.ceil(following - now) + 1)
list_flow_key(KEYS[8], ARGV[12], now + math.ceil(following - now) + 1, now)
if due > now then
  redis.call("ZADD", KEYS[4], string.format("%.6f", due), ARGV[1])
  keep_result(ARGV[13], ARGV[20], ARGV[14], ARGV[15], ARGV[16], ARGV[17], now, due)
  return { "delayed", string.format("%.6f", due) }
end
keep_result(ARGV[13], ARGV[20], ARGV[18], ARGV[19], "", ARGV[17], now, nil)
redis.call("SADD", KEYS[2], ARGV[5])
list_priority_level(KEYS[5], ARGV[6], ARGV[7])
if ARGV[21] and ARGV[21] ~= "" then
  redis.call("HSET", KEYS[3], ARGV[21], ARGV[5] .. "\n" .. ARGV[1])
  return { "queued", string.format("%.6f", now) }
end
local length = redis.call("LPUSH", KEYS[3], ARGV[1])
wake_if_was_empty(ARGV[6], ARGV[5], length, 1)
enter_group(ARGV[8], ARGV[9], ARGV[10], ARGV[11], length, 1, KEYS[5], ARGV[6], ARGV[5])
trim_backlog(KEYS[3], ARGV[11], length, KEYS[9], KEYS[10])
return { "queued", string.format("%.6f", now) }
