-- Fragments: none
-- Open a batch (batch.rs): its hash, open until its creator closes it, and
-- its entry in the list of batches; a child batch counts as one pending
-- unit ("batch:<id>") of its parent, in the same step.
--
-- KEYS[1]  NS:batches (zset: batch id -> created at)
-- ARGV[1]  the batch keys' prefix NS:batch: (the batch's hash is
--          <prefix><id>, its parent's <prefix><parent id>; see batch/)
-- ARGV[2]  the batch id
-- ARGV[3]  now (epoch seconds)
-- ARGV[4]  ttl: seconds its keys live from now (and again from its close)
-- ARGV[5]  keep_for: seconds its keys live once it succeeded
-- ARGV[6]  description
-- ARGV[7]  the parent batch's id, "" for none
-- ARGV[8]  the deepest nesting allowed (a top batch is at depth 0)
-- ARGV[9]  units counted in at once (0; a workflow's step counts the jobs
--          it will hand over, see workflow.rs)
-- ARGV[10] "1": open until closed; "0": closed already (a workflow step)
-- ARGV[11] members: JSON list of the jids whose results its callbacks
--          take, "" for none (see batch/)
-- ARGV[12] the result keys' prefix NS:result: (a record is <prefix><jid>)
-- ARGV[13] JSON [[jid, record, ttl], ...]: the `waiting` result record of
--          each callback kept with result_ttl (results.rs), "" for none.
--          Written here, so a job with result_ttl has a record as soon as
--          its jid is known, and a missing record means none will come
-- ARGV[14] kind: "workflow", "step" (a workflow's), or "" for a batch
-- ARGV[15] a workflow's steps: JSON list of their batch ids in order, ""
--          for none
-- ARGV[16..] pairs {event, callbacks JSON} (see batch/)
--
-- Returns 1, or an error (nothing written): BATCHEXISTS <id> when the id
-- is taken, NOBATCH <parent id> when the parent does not exist, BATCHDEPTH
-- <deepest> when the nesting is too deep.
local prefix, bid, now, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local batch, parent = prefix .. bid, ARGV[7]
if redis.call("EXISTS", batch) == 1 then
  return redis.error_reply("BATCHEXISTS " .. bid)
end
local depth = 0
if parent ~= "" then
  local above = redis.call("HMGET", prefix .. parent, "depth", "ttl")
  if not above[1] then
    return redis.error_reply("NOBATCH " .. parent)
  end
  depth = tonumber(above[1]) + 1
  if depth > tonumber(ARGV[8]) then
    return redis.error_reply("BATCHDEPTH " .. ARGV[8])
  end
  redis.call("HINCRBY", prefix .. parent, "total", 1)
  redis.call("HINCRBY", prefix .. parent, "pending", 1)
  redis.call("EXPIRE", prefix .. parent, above[2])
  redis.call("EXPIRE", prefix .. parent .. ":failures", above[2])
end
redis.call(
  "HSET", batch,
  "total", ARGV[9], "pending", ARGV[9], "dead", 0, "parent", parent, "depth", depth,
  "description", ARGV[6], "created_at", now, "ttl", ttl, "keep_for", ARGV[5]
)
if ARGV[10] == "1" then
  redis.call("HSET", batch, "open", 1)
end
if ARGV[11] ~= "" then
  redis.call("HSET", batch, "members", ARGV[11])
end
if ARGV[13] ~= "" then
  for _, waiting in ipairs(cjson.decode(ARGV[13])) do
    redis.call("SET", ARGV[12] .. waiting[1], waiting[2], "EX", waiting[3])
  end
end
if ARGV[14] ~= "" then
  redis.call("HSET", batch, "kind", ARGV[14])
end
if ARGV[15] ~= "" then
  redis.call("HSET", batch, "steps", ARGV[15])
end
for i = 16, #ARGV, 2 do
  redis.call("HSET", batch, "callbacks:" .. ARGV[i], ARGV[i + 1])
end
redis.call("EXPIRE", batch, ttl)
redis.call("ZADD", KEYS[1], now, bid)
return 1
