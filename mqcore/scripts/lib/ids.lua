-- Stream ids 'ms-seq' (exact as Lua numbers up to 2^53)
local function id_parse(id)
  local ms, seq = string.match(id or '', '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function id_less(a, b)
  local am, as = id_parse(a)
  local bm, bs = id_parse(b)
  if not am or not bm then return false end
  if am ~= bm then return am < bm end
  return as < bs
end
local function id_after(id)
  local ms, seq = id_parse(id)
  if seq < 9007199254740991 then return string.format('%.0f-%.0f', ms, seq + 1) end
  return id -- beyond exact Lua numbers: keep the entry (one too many is safe)
end
