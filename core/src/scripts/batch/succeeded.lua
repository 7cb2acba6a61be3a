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
