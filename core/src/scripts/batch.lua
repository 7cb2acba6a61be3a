-- Prepended to every script that settles a job (ack, fail, kill, drop) and
-- to the batch scripts (see batch.rs): a batch's accounting, done in the
-- same atomic step that settles its job, so a job is counted once and a
-- callback handed over once, whatever dies when.
--
-- A batch's keys are named from the prefix P (NS:batch:) and its id here,
-- inside the script, because a parent's id is only known once its child's
-- hash is read; they all live on the namespace's slot:
--   P<bid>           hash: total, pending, dead, open ("1" while its creator
--                    adds jobs), parent, description, created_at, ttl,
--                    keep_for, completed_at, succeeded_at, died_at,
--                    fired:<event> ("1" once its callbacks are handed over),
--                    callbacks:<event> (JSON list of {queue, head, tail,
--                    jid, what}: what goes between head and tail, see
--                    batch_fire), members (JSON list of the jids whose
--                    results a callback gets, in order; workflows only)
--   P<bid>:failures  hash: unit (a jid, or "batch:<child id>") -> "failed"
--                    or "dead", for units that failed and have not since
--                    succeeded
--   P<bid>:results   hash: jid -> the value it returned (JSON), for jobs
--                    pushed with batch_result (a workflow step's jobs
--                    whose results the next step takes)
-- A unit is pending until it succeeds. The batch is complete when every
-- pending unit has failed at least once (pending == failures), succeeded
-- when none is pending; it dies with its first dead unit. A callback is
-- written to the outbox (NS:outbox, hand-over id "<callback jid>-batch")
-- with the batch's status spliced in as its first argument; outbox.rs
-- pushes it (push_once.lua), so a crash before the push repeats only the
-- push, which its marker makes happen once.
--
-- Each event is also counted in NS:stat:batches_<event> (named from P).
-- A batch whose hash is gone (expired, deleted) counts nothing.

local batch_succeeded, batch_failed, batch_check

-- The status a callback gets (JSON): what the hash says now.
local function batch_status(bid, batch, event, now)
  local f = redis.call("HMGET", batch, "description", "total", "pending", "dead", "created_at", "parent")
  local status = {
    bid = bid,
    event = event,
    description = f[1] or "",
    total = tonumber(f[2]) or 0,
    pending = tonumber(f[3]) or 0,
    failures = redis.call("HLEN", batch .. ":failures"),
    dead = tonumber(f[4]) or 0,
    created_at = tonumber(f[5]) or 0,
    at = tonumber(now),
  }
  if f[6] and f[6] ~= "" then
    status.parent = f[6]
  end
  return cjson.encode(status)
end

-- A key of the batch's (its failures, its results) that the write just
-- before may have made: it expires with the batch.
local function expire_with_batch(batch, key)
  if redis.call("TTL", key) == -1 then
    local ttl = redis.call("TTL", batch)
    if ttl > 0 then
      redis.call("EXPIRE", key, ttl)
    end
  end
end

-- The results of the batch's members, in their order (JSON text, as the
-- jobs returned them: never decoded here, so no number loses digits).
-- `one`: the first member's result alone, else a list.
local function batch_results(batch, one)
  local members = cjson.decode(redis.call("HGET", batch, "members") or "[]")
  if #members == 0 then
    return one and "null" or "[]"
  end
  local values = redis.call("HMGET", batch .. ":results", unpack(members))
  for i = 1, #members do
    values[i] = values[i] or "null"
  end
  if one then
    return values[1]
  end
  return "[" .. table.concat(values, ",") .. "]"
end

-- Hands the callbacks of `event` over to the outbox, once per batch, and
-- counts the event in NS:stat:batches_<event> (P is NS:batch:). What goes
-- between a callback's head and tail (its 5th field): the batch's status
-- (absent), nothing ("none"), its one member's result ("result") or its
-- members' results as a list ("results").
local function batch_fire(P, bid, batch, event, now, outbox, handed)
  if redis.call("HSETNX", batch, "fired:" .. event, "1") == 0 then
    return false
  end
  redis.call("INCR", string.sub(P, 1, -7) .. "stat:batches_" .. event)
  local raw = redis.call("HGET", batch, "callbacks:" .. event)
  if raw then
    local spliced = {}
    for _, callback in ipairs(cjson.decode(raw)) do
      local what = callback[5] or "status"
      if not spliced[what] then
        if what == "none" then
          spliced[what] = ""
        elseif what == "result" or what == "results" then
          spliced[what] = batch_results(batch, what == "result")
        else
          spliced[what] = batch_status(bid, batch, event, now)
        end
      end
      local id = callback[4] .. "-batch"
      -- Enqueued now, when it is handed over (as the scheduler re-stamps a
      -- job it moves): the payload is an object, so the field goes last.
      local payload = callback[2] .. spliced[what] .. callback[3]
      payload = string.sub(payload, 1, -2) .. ',"enqueued_at":' .. now .. "}"
      redis.call("HSET", outbox, id, callback[1] .. "\n" .. payload)
      handed[#handed + 1] = id
    end
  end
  return true
end

-- Fires what the batch's counts now call for, and tells its parent.
batch_check = function(P, bid, now, outbox, handed)
  local batch = P .. bid
  local f = redis.call("HMGET", batch, "open", "pending", "parent", "keep_for")
  if f[1] == "1" or not f[2] then
    return
  end
  local pending = tonumber(f[2])
  local failures = redis.call("HLEN", batch .. ":failures")
  local parent = f[3]
  if parent == "" then
    parent = nil
  end
  if pending <= failures and batch_fire(P, bid, batch, "complete", now, outbox, handed) then
    redis.call("HSET", batch, "completed_at", now)
    if parent and pending > 0 then
      batch_failed(P, parent, "batch:" .. bid, false, now, outbox, handed)
    end
  end
  if pending <= 0 and batch_fire(P, bid, batch, "success", now, outbox, handed) then
    redis.call("HSET", batch, "succeeded_at", now)
    if f[4] then
      redis.call("EXPIRE", batch, f[4])
      redis.call("EXPIRE", batch .. ":failures", f[4])
      redis.call("EXPIRE", batch .. ":results", f[4])
    end
    if parent then
      batch_succeeded(P, parent, {"batch:" .. bid}, now, outbox, handed)
    end
  end
end

-- Units `units` (a list, at most a few thousand) of batch `bid` succeeded:
-- one settle's successes of one batch, counted together (five commands
-- for the lot, whatever its size). `results`: a list of {jid, value} pairs
-- to keep (batch_result jobs), or nil.
batch_succeeded = function(P, bid, units, now, outbox, handed, results)
  local batch = P .. bid
  if redis.call("EXISTS", batch) == 0 then
    return
  end
  if results and #results > 0 then
    redis.call("HSET", batch .. ":results", unpack(results))
    expire_with_batch(batch, batch .. ":results")
  end
  local failures = batch .. ":failures"
  if redis.call("HLEN", failures) > 0 then
    local was = redis.call("HMGET", failures, unpack(units))
    local gone, dead = {}, 0
    for i = 1, #units do
      if was[i] then
        gone[#gone + 1] = units[i]
        if was[i] == "dead" then
          dead = dead + 1
        end
      end
    end
    if #gone > 0 then
      redis.call("HDEL", failures, unpack(gone))
    end
    if dead > 0 then
      redis.call("HINCRBY", batch, "dead", -dead)
    end
  end
  redis.call("HINCRBY", batch, "pending", -#units)
  batch_check(P, bid, now, outbox, handed)
end

-- Unit `unit` of batch `bid` failed (and will be retried, or was dropped),
-- or died (`dead`).
batch_failed = function(P, bid, unit, dead, now, outbox, handed)
  local batch = P .. bid
  if redis.call("EXISTS", batch) == 0 then
    return
  end
  local failures = batch .. ":failures"
  local was = redis.call("HGET", failures, unit)
  if dead and was ~= "dead" then
    redis.call("HSET", failures, unit, "dead")
    redis.call("HINCRBY", batch, "dead", 1)
    if batch_fire(P, bid, batch, "death", now, outbox, handed) then
      redis.call("HSET", batch, "died_at", now)
      local parent = redis.call("HGET", batch, "parent")
      if parent and parent ~= "" then
        batch_failed(P, parent, "batch:" .. bid, true, now, outbox, handed)
      end
    end
  elseif not was then
    redis.call("HSET", failures, unit, "failed")
  end
  -- The first failure makes the hash.
  expire_with_batch(batch, failures)
  if not was then
    batch_check(P, bid, now, outbox, handed)
  end
end
