-- Fragments: none
-- Reliable fetch: move up to ARGV[1] jobs from the queues, tried in the given
-- order, into this process's in-progress hash, skipping paused queues. One
-- round trip for a whole batch, and a cost that does not grow with the
-- number of queues or jobs: the paused set is read once, LMPOP takes from
-- the first non-empty queue of the list in one command, and one HSET
-- records what it took. So an idle worker's poll of 200 queues is three
-- commands, and a full batch of jobs about three. On a server without LMPOP
-- (Redis 6.2) each job is taken with RPOP.
--
-- KEYS[1]   NS:paused_queues (set)
-- KEYS[2]   NS:in_progress:<identity> (hash: delivery token -> payload)
-- KEYS[3..] the lists to read, in the order to try them: each queue's lists
--           (NS:queue:<q>, and NS:queue@<level>:<q> for each priority level
--           in use, highest level first: see priority.rs)
-- ARGV[1]   the most jobs to move (integer >= 1)
-- ARGV[2]   the first delivery token: the i-th job taken (from 0) is
--           recorded under field ARGV[2] + i, tokens the caller reserved
-- ARGV[3..] the queue name of each list, aligned with KEYS[3..]
--
-- Returns a flat array {queue_name, payload, queue_name, payload, ...}, in
-- token order (empty when every unpaused queue is empty).
local wanted = tonumber(ARGV[1])
local first_token = tonumber(ARGV[2])
local paused = {}
for _, name in ipairs(redis.call("SMEMBERS", KEYS[1])) do
  paused[name] = true
end
local keys, name_of = {}, {}
for i = 3, #KEYS do
  if not paused[ARGV[i]] then
    keys[#keys + 1] = KEYS[i]
    name_of[KEYS[i]] = ARGV[i]
  end
end

local taken = {}
local count = 0

-- One HSET per batch of jobs (bounded: Lua's unpack has a stack limit).
local function record(jobs)
  for first = 1, #jobs, 500 do
    local fields = {}
    for i = first, math.min(first + 499, #jobs) do
      fields[#fields + 1] = string.format("%d", first_token + count + i - 1)
      fields[#fields + 1] = jobs[i]
    end
    redis.call("HSET", KEYS[2], unpack(fields))
  end
end

-- Redis 6.2: one RPOP per job, queue by queue.
local function one_by_one()
  for _, key in ipairs(keys) do
    while count < wanted do
      local job = redis.call("RPOP", key)
      if not job then
        break
      end
      record({ job })
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
  record(jobs)
  for _, job in ipairs(jobs) do
    taken[#taken + 1] = name_of[key]
    taken[#taken + 1] = job
  end
  count = count + #jobs
end
return taken
