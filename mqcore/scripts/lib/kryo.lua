-- Redisson's Kryo codec (Kryo 5, writeClassAndObject), for what Java reads back: strings,
-- ints and HashMap<String, String>, byte for byte as mqcore/codec/kryo.py writes them
local function kvarint(n)
  local out = ''
  while n >= 128 do
    out = out .. string.char(n % 128 + 128)
    n = math.floor(n / 128)
  end
  return out .. string.char(n)
end
local function kint(text)
  local n = math.floor(tonumber(text) or 0)
  if n >= 0 then return '\2' .. kvarint(n * 2) end
  return '\2' .. kvarint(-n * 2 - 1)
end
local function kunit(c)
  if c < 128 then return string.char(c) end
  if c < 2048 then return string.char(192 + math.floor(c / 64), 128 + c % 64) end
  return string.char(224 + math.floor(c / 4096), 128 + math.floor(c / 64) % 64, 128 + c % 64)
end
local function kstr(s)
  if #s > 1 and #s < 64 and not string.find(s, '[\128-\255]') then
    return '\3' .. string.sub(s, 1, -2) .. string.char(string.byte(s, -1) + 128)
  end
  -- UTF-8 to UTF-16 units, each written in 1-3 bytes (a supplementary character as two)
  local body, units, i = {}, 0, 1
  while i <= #s do
    local b, cp, len = string.byte(s, i), nil, 1
    if b < 128 then cp = b
    elseif b >= 240 and i + 3 <= #s then
      len = 4
      cp = (b - 240) * 262144 + (string.byte(s, i + 1) - 128) * 4096
        + (string.byte(s, i + 2) - 128) * 64 + string.byte(s, i + 3) - 128
    elseif b >= 224 and i + 2 <= #s then
      len = 3
      cp = (b - 224) * 4096 + (string.byte(s, i + 1) - 128) * 64 + string.byte(s, i + 2) - 128
    elseif b >= 192 and i + 1 <= #s then
      len = 2
      cp = (b - 192) * 64 + string.byte(s, i + 1) - 128
    else cp = 65533 end
    if cp >= 65536 then
      cp = cp - 65536
      body[#body + 1] = kunit(55296 + math.floor(cp / 1024)) .. kunit(56320 + cp % 1024)
      units = units + 2
    else
      body[#body + 1] = kunit(cp)
      units = units + 1
    end
    i = i + len
  end
  local n = units + 1
  local head
  if n < 64 then head = string.char(n + 128)
  else
    head = string.char(n % 64 + 192)
    n = math.floor(n / 64)
    while n > 0 do
      local low = n % 128
      n = math.floor(n / 128)
      if n > 0 then low = low + 128 end
      head = head .. string.char(low)
    end
  end
  return '\3' .. head .. table.concat(body)
end
local function kmap(t)
  local parts, n = {}, 0
  for k, v in pairs(t) do
    parts[#parts + 1] = kstr(k) .. kstr(v)
    n = n + 1
  end
  return '\1\0java.util.HashMa\240' .. kvarint(n + 1) .. table.concat(parts)
end
-- a Kryo string of ASCII (ids, group names) back to text; other values as they are
local function kunstr(v)
  if not v then return nil end
  if string.byte(v, 1) ~= 3 then return v end
  local b = string.byte(v, 2)
  if b and b < 128 then
    return string.sub(v, 2, -2) .. string.char(string.byte(v, -1) - 128)
  end
  local at = 3
  if b and b >= 192 then
    repeat
      local c = string.byte(v, at)
      at = at + 1
    until not c or c < 128
  end
  return string.sub(v, at)
end
