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
