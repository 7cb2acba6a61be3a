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
