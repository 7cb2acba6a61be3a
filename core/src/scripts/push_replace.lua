-- Fragments (prepended, in this order): wake.lua, group.lua, flow_index.lua
-- Push a replacing job (see flow.rs): a push whose class, queue and key
-- still have a job waiting on its queue replaces that job in place (its
-- place in line kept, its jid kept, the new push's payload); else it is
-- pushed as any push (push.lua's steps for one job) and becomes the key's
-- job. The key's job is found by its payload on its list (LPOS: a scan of
-- the list from its newest end, at worst its whole length); once taken it
-- is not there, and the next push is a new job.
--
-- KEYS[1] NS:replace:<digest of class, queue and key> (hash: jid, the
--         payload as queued, the list it waits on); sharded by queue
--         {NS:<q>}:replace:<digest>, on the queue's slot (ARGV[18])
-- KEYS[2] NS:queues (set)
-- KEYS[3] the job's list (NS:queue:<q>, a level's or its group's)
-- KEYS[4] NS:priorities (set)
-- KEYS[5] NS:stat:replaced, KEYS[6] NS:stat:replaced:<yyyy-mm-dd>
--         (counters of the jobs replaced; sharded by queue the queue's:
--         see Keys::queue_stat)
-- KEYS[7] NS:flow_keys (see flow_index.lua)
-- KEYS[8] NS:stat:backlog_dropped, KEYS[9] its day's count (a group's
--         backlog cap among the limits it declares: see group.lua)
-- ARGV[1] the payload up to its jid, ARGV[2] the payload after its jid
--         (the payload is ARGV[1] .. jid .. ARGV[2]; see push_debounce.lua)
-- ARGV[3] this push's jid
-- ARGV[4] the queue's name
-- ARGV[5] the wake channel (see wake.lua)
-- ARGV[6] the job's priority level, "<level> <queue>", or "" (default)
-- ARGV[7..10] its queue's ring, its group, its queue's declared limits and
--         the limits it declares (see enter_group in group.lua; "" for none)
-- ARGV[11] how long the key's state lasts after its last push (seconds)
-- ARGV[12] the key's member of NS:flow_keys
-- ARGV[13] now (epoch seconds, the fleet's clock)
-- ARGV[14..17] the status record of a job pushed with result_ttl, as
--         queued (see keep_result in flow_index.lua): the prefix of its
--         key (NS:result:, "" for none), the record's head and rest
--         around its jid, and how long it lasts
-- ARGV[18] "1" sharded by queue: every key is on the queue's slot, and
--         KEYS[2], KEYS[4] and KEYS[7] (on the namespace's) are stand-ins
--         not touched: the caller lists the queue first and writes the
--         key's index entry and status record after (flow.rs)
--
-- Returns {the jid that will run, 1 when this push queued a new job, else 0},
-- or a new job past its group's backlog cap refused (BACKLOG, see
-- backlog_refusal in group.lua) with nothing written.
local sharded = ARGV[18] == "1"
local state = redis.call("HMGET", KEYS[1], "jid", "payload", "list")
if state[1] and state[2] and state[3] == KEYS[3] then
  local at = redis.call("LPOS", KEYS[3], state[2])
  if at then
    local payload = ARGV[1] .. state[1] .. ARGV[2]
    redis.call("LSET", KEYS[3], at, payload)
    redis.call("HSET", KEYS[1], "payload", payload)
    redis.call("EXPIRE", KEYS[1], ARGV[11])
    if not sharded then
      list_flow_key(KEYS[7], ARGV[12], tonumber(ARGV[13]) + tonumber(ARGV[11]), tonumber(ARGV[13]))
      keep_result(ARGV[14], state[1], ARGV[15], ARGV[16], "", ARGV[17], 0, nil)
    end
    redis.call("INCR", KEYS[5])
    redis.call("INCR", KEYS[6])
    return { state[1], 0 }
  end
end
local refused = backlog_refusal(KEYS[3], ARGV[8], ARGV[10], 1)
if refused then
  return refused
end
local payload = ARGV[1] .. ARGV[3] .. ARGV[2]
local registry = sharded and "" or KEYS[4]
if not sharded then
  redis.call("SADD", KEYS[2], ARGV[4])
  list_priority_level(registry, ARGV[5], ARGV[6])
end
local length = redis.call("LPUSH", KEYS[3], payload)
wake_if_was_empty(ARGV[5], ARGV[4], length, 1)
enter_group(ARGV[7], ARGV[8], ARGV[9], ARGV[10], length, 1, registry, ARGV[5], ARGV[4])
trim_backlog(KEYS[3], ARGV[10], length, KEYS[8], KEYS[9])
redis.call("HSET", KEYS[1], "jid", ARGV[3], "payload", payload, "list", KEYS[3])
redis.call("EXPIRE", KEYS[1], ARGV[11])
if not sharded then
  list_flow_key(KEYS[7], ARGV[12], tonumber(ARGV[13]) + tonumber(ARGV[11]), tonumber(ARGV[13]))
  keep_result(ARGV[14], ARGV[3], ARGV[15], ARGV[16], "", ARGV[17], 0, nil)
end
return { ARGV[3], 1 }
