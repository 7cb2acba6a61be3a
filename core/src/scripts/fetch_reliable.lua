-- Reliable fetch: move up to ARGV[1] jobs from the queues, tried in the given
-- order, onto this process's in-progress list, skipping paused queues. One
-- round trip for a whole batch, and a cost that does not grow with the
-- number of queues: the paused set is read once, and LMPOP takes from the
-- first non-empty queue of the list in one command (then one LPUSH moves
-- what it took). So an idle worker's poll of 200 queues is three commands.
-- On a server without LMPOP (Redis 6.2) each job is moved with LMOVE.
--
-- KEYS[1]   NS:paused_queues (set)
-- KEYS[2]   NS:in_progress:<identity> (list; jobs land on its left, the
--           oldest first, as one LMOVE RIGHT LEFT per job would leave them)
-- KEYS[3..] NS:queue:<q> for each queue, in the order to try them
-- ARGV[1]   the most jobs to move (integer >= 1)
-- ARGV[2..] the queue names, aligned with KEYS[3..]
--
-- Returns a flat array {queue_name, payload, queue_name, payload, ...}
-- (empty when every unpaused queue is empty).
local wanted = tonumber(ARGV[1])
local paused = {}
for _, name in ipairs(redis.call("SMEMBERS", KEYS[1])) do
  paused[name] = true
end
local keys, name_of = {}, {}
for i = 3, #KEYS do
  if not paused[ARGV[i - 1]] then
    keys[#keys + 1] = KEYS[i]
    name_of[KEYS[i]] = ARGV[i - 1]
  end
end

local taken = {}
local count = 0

-- Redis 6.2: one LMOVE per job, queue by queue.
local function one_by_one()
  for _, key in ipairs(keys) do
    while count < wanted do
      local job = redis.call("LMOVE", key, KEYS[2], "RIGHT", "LEFT")
      if not job then
        break
      end
      taken[#taken + 1] = name_of[key]
      taken[#taken + 1] = job
      count = count + 1
    end
  end
  return taken
end

while count < wanted and #keys > 0 do
  local command = { "LMPOP", #keys }
  for _, key in ipairs(keys) do
    command[#command + 1] = key
  end
  command[#command + 1] = "RIGHT"
  command[#command + 1] = "COUNT"
  command[#command + 1] = wanted - count
  local popped = redis.pcall(unpack(command))
  if type(popped) == "table" and popped.err then
    if count == 0 then
      return one_by_one()
    end
    return redis.error_reply(popped.err)
  end
  if not popped then
    break
  end
  local key, jobs = popped[1], popped[2]
  -- Bounded pushes: Lua's unpack has a stack limit.
  for first = 1, #jobs, 1000 do
    redis.call("LPUSH", KEYS[2], unpack(jobs, first, math.min(first + 999, #jobs)))
  end
  for _, job in ipairs(jobs) do
    taken[#taken + 1] = name_of[key]
    taken[#taken + 1] = job
  end
  count = count + #jobs
end
return taken
