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

