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
