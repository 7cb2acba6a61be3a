-- Prepended to every script that takes one job off an in-progress key
-- (see scripts.rs and in_progress.rs).
--
-- A process records the jobs it holds in NS:in_progress:<identity>, a hash
-- of one field per delivery (a token of its own; the value is the payload
-- as fetched), so taking one off is one O(1) HDEL. Processes of earlier
-- releases kept a list of payloads instead; recovery still meets those.
-- `entry` names the record: the field, "*" for a list entry (removed by its
-- payload), or "-" for none at all (basic fetch: the job is only in memory).
--
-- Returns true if the job was there (and is now taken off), or "-".
local function take_in_progress(key, entry, payload)
  if entry == "-" then
    return true
  end
  if entry == "*" then
    return redis.call("LREM", key, -1, payload) > 0
  end
  return redis.call("HDEL", key, entry) > 0
end
