-- Prepended to every script that pushes onto a queue (see scripts.rs).
--
-- Idle workers wait on the namespace's wake channel, not on the queues
-- (fetch/reliable.rs): a push that leaves `length` jobs on a queue after
-- pushing `pushed` found it empty, and publishes the queue's name there. A
-- queue that already held jobs publishes nothing, so a busy system pays
-- nothing; an empty `channel` publishes nothing either.
local function wake_if_was_empty(channel, queue_name, length, pushed)
  if length == pushed and channel ~= nil and channel ~= "" then
    redis.call("PUBLISH", channel, queue_name)
  end
end


-- A push of a job at a priority level other than the default lists the
-- level in NS:priorities (member "<level> <queue>", see priority.rs): that
-- is where workers learn which lists of a queue to read. The push that
-- lists it first says so on the wake channel ("priority <member>"), so
-- running workers read the level's list from their next fetch. Nothing
-- happens for an empty `member` (the default level), nor for an empty
-- `registry` (sharded by queue: a script on a queue's slot cannot reach
-- the registry, on the namespace's, so the caller lists first with
-- list_queues.lua).
local function list_priority_level(registry, channel, member)
  if member == nil or member == "" or registry == nil or registry == "" then
    return
  end
  if redis.call("SADD", registry, member) == 1 and channel ~= nil and channel ~= "" then
    redis.call("PUBLISH", channel, "priority " .. member)
  end
end
