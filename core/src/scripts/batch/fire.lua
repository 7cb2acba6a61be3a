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
