-- Reliable fetch: move up to ARGV[1] jobs from the queues, tried in the given
-- order, onto this process's in-progress list, skipping paused queues. One
-- round trip for a whole batch: when queues are deep this is what lets a
-- worker move more than one job per call.
--
-- KEYS[1]   NS:paused_queues (set)
-- KEYS[2]   NS:in_progress:<identity> (list; jobs land on its left)
-- KEYS[3..] NS:queue:<q> for each queue, in the order to try them
-- ARGV[1]   the most jobs to move (integer >= 1)
-- ARGV[2..] the queue names, aligned with KEYS[3..]
--
-- Returns a flat array {queue_name, payload, queue_name, payload, ...}
-- (empty when every unpaused queue is empty).
local wanted = tonumber(ARGV[1])
local taken = {}
local count = 0
for i = 3, #KEYS do
  if count >= wanted then
    break
  end
  local name = ARGV[i - 1]
  if redis.call("SISMEMBER", KEYS[1], name) == 0 then
    while count < wanted do
      local job = redis.call("LMOVE", KEYS[i], KEYS[2], "RIGHT", "LEFT")
      if not job then
        break
      end
      taken[#taken + 1] = name
      taken[#taken + 1] = job
      count = count + 1
    end
  end
end
return taken
