-- The results of the batch's members, in their order (JSON text, as the
-- jobs returned them: never decoded here, so no number loses digits).
-- `one`: the first member's result alone, else a list.
local function batch_results(batch, one)
  local members = cjson.decode(redis.call("HGET", batch, "members") or "[]")
  if #members == 0 then
    return one and "null" or "[]"
  end
  local values = redis.call("HMGET", batch .. ":results", unpack(members))
  for i = 1, #members do
    values[i] = values[i] or "null"
  end
  if one then
    return values[1]
  end
  return "[" .. table.concat(values, ",") .. "]"
end
