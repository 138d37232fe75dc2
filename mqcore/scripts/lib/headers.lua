-- Java's Map.toString() headers, '{k=v, k2=v2}' (mqcore.codec.parse_headers reads them the same)
local function java_map(text)
  local out = {}
  if type(text) ~= 'string' or string.sub(text, 1, 1) ~= '{' or string.sub(text, -1) ~= '}' then
    return out
  end
  local body = string.sub(text, 2, -2)
  local keys = {}
  local pos = 1
  while pos <= #body do
    if pos == 1 or string.sub(body, pos - 2, pos - 1) == ', ' then
      local key = string.match(body, '^([^=,{} ][^=,{}]*)=', pos)
      if key then
        keys[#keys + 1] = {pos, key, pos + #key + 1}
      end
    end
    pos = pos + 1
  end
  if #keys == 0 or keys[1][1] ~= 1 then return out end
  for i, k in ipairs(keys) do
    local stop = #body
    if keys[i + 1] then stop = keys[i + 1][1] - 3 end
    out[k[2]] = string.sub(body, k[3], stop)
  end
  return out
end
-- the one header rule (mqcore.codec.parse_headers): a JSON object's strings as they are,
-- numbers, booleans, objects and arrays as JSON text, null dropped; Java's map toString()
-- as its pairs; anything else no headers
local function read_headers(text)
  local headers = {}
  if not text then return headers end
  local ok, decoded = pcall(cjson.decode, text)
  if not ok then ok, decoded = true, java_map(text) end
  if ok and type(decoded) == 'table' then
    for k, v in pairs(decoded) do
      if type(k) == 'string' then
        if type(v) == 'string' then
          headers[k] = v
        elseif type(v) == 'number' or type(v) == 'boolean' or type(v) == 'table' then
          headers[k] = cjson.encode(v)
        end
      end
    end
  end
  return headers
end
