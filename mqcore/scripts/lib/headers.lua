-- headers longer than this many bytes count as none (mqcore.codec.HEADERS_MAX_BYTES, the same
-- cap): parsing them is bounded, so no script that reads headers blocks Redis on hostile ones
local HEADERS_MAX_BYTES = 8192
-- Java's Map.toString() headers, '{k=v, k2=v2}' (mqcore.codec.parse_headers reads them the same):
-- a key starts the body or follows ', '; the walk jumps from one ', ' to the next
local function java_map(text)
  local out = {}
  if type(text) ~= 'string' or string.sub(text, 1, 1) ~= '{' or string.sub(text, -1) ~= '}' then
    return out
  end
  local body = string.sub(text, 2, -2)
  local keys = {}
  local pos = 1
  while pos do
    -- the longest run of key characters, then '=' (the pattern '...*=' would backtrack)
    local key = string.match(body, '^[^=,{} ][^=,{}]*', pos)
    if key and string.byte(body, pos + #key) == 61 then -- '='
      keys[#keys + 1] = {pos, key, pos + #key + 1}
    elseif pos == 1 then
      return out
    end
    local sep = string.find(body, ', ', pos + (key and #key or 0), true)
    pos = sep and sep + 2
  end
  for i, k in ipairs(keys) do
    local stop = #body
    if keys[i + 1] then stop = keys[i + 1][1] - 3 end
    out[k[2]] = string.sub(body, k[3], stop)
  end
  return out
end
-- the one header rule (mqcore.codec.parse_headers): a JSON object's strings as they are,
-- numbers, booleans, objects and arrays as JSON text, null dropped; Java's map toString()
-- as its pairs; anything else (or more than HEADERS_MAX_BYTES) no headers
local function read_headers(text)
  local headers = {}
  if not text or #text > HEADERS_MAX_BYTES then return headers end
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
