-- the lease fence of a consumer's write (ack, retry, dead letter): `fence` is '<epoch>' or
-- '<epoch>|<owner>', '' = unfenced (an operator's action). The epoch key must still hold the
-- epoch; with an owner, the lease key must also be free or still the owner's: a take-over by a
-- writer that does not raise the epoch (Java takes the lease with SETNX) fences us as well.
-- True when the write is refused (the caller then writes nothing).
local function stale_fence(epoch_key, lease_key, fence)
  if fence == '' then return false end
  local epoch, owner = string.match(fence, '^(%d+)|(.+)$')
  if redis.call('GET', epoch_key) ~= (epoch or fence) then return true end
  if not owner then return false end
  local holder = redis.call('GET', lease_key)
  return holder ~= false and holder ~= owner
end
