"""The Lua scripts of the Redis seen-sets: every check-and-set is one of these, run atomically.

Every adding script is *replayable*: it is called with a reply key of its own (a random token
per call, in the slot of the keys it touches) and keeps its answer there for ``replay_ms``.
Called again with the same reply key — a client retrying a call whose reply it never got (a
socket timeout while the server was busy, a connection cut) — it returns the kept answer and
changes nothing. So a retried add gets the answers of the add that timed out, whichever of
the two the server ran first.
"""

from __future__ import annotations

import hashlib

__all__ = [
    "AGEING_BLOOM",
    "AGEING_SET",
    "BLOOM_ADD",
    "BLOOM_CHECK",
    "META",
    "SCRIPTS",
    "SET_ADD",
    "SET_FORGET",
    "Script",
]


class Script:
    """A Lua source and its SHA-1 (for ``EVALSHA``)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()


# KEYS[1]: a set; KEYS[2]: this call's reply key. ARGV[1]: 16-byte digests back to back;
# ARGV[2]: how long to keep the reply (ms). One byte per digest: "1" if new.
SET_ADD = Script("""
local kept = redis.call('GET', KEYS[2])
if kept then return kept end
local key, data, out = KEYS[1], ARGV[1], {}
for u = 1, #data / 16 do
  local at = (u - 1) * 16
  out[u] = redis.call('SADD', key, string.sub(data, at + 1, at + 16))
end
local reply = table.concat(out)
redis.call('SET', KEYS[2], reply, 'PX', ARGV[2])
return reply
""")

# KEYS[1]: a set. ARGV[1]: digests. One byte per digest: "1" if it was there (now removed).
SET_FORGET = Script("""
local key, data, out = KEYS[1], ARGV[1], {}
for u = 1, #data / 16 do
  local at = (u - 1) * 16
  out[u] = redis.call('SREM', key, string.sub(data, at + 1, at + 16))
end
return table.concat(out)
""")

# KEYS[1]: one block; KEYS[2]: this call's reply key. ARGV[1]: k; ARGV[2]: k big-endian
# uint32 bit positions per digest; ARGV[3]: reply ms. Sets every digest's bits in order; "1"
# for a digest one of whose bits was still 0 (new).
BLOOM_ADD = Script("""
local kept = redis.call('GET', KEYS[2])
if kept then return kept end
local key, k, data = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local fmt, args, out, at = '>' .. string.rep('I4', k), {}, {}, 1
for i = 1, k do args[4 * i - 3] = 'SET'; args[4 * i - 2] = 'u1'; args[4 * i] = 1 end
for u = 1, #data / (4 * k) do
  local values = {struct.unpack(fmt, data, at)}
  at = values[k + 1]
  for i = 1, k do args[4 * i - 1] = values[i] end
  local old, new = redis.call('BITFIELD', key, unpack(args)), '0'
  for i = 1, k do if old[i] == 0 then new = '1'; break end end
  out[u] = new
end
local reply = table.concat(out)
redis.call('SET', KEYS[2], reply, 'PX', ARGV[3])
return reply
""")

# As BLOOM_ADD, reading only: "1" for a digest whose bits are all set (maybe present).
BLOOM_CHECK = Script("""
local key, k, data = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local fmt, args, out, at = '>' .. string.rep('I4', k), {}, {}, 1
for i = 1, k do args[3 * i - 2] = 'GET'; args[3 * i - 1] = 'u1' end
for u = 1, #data / (4 * k) do
  local values = {struct.unpack(fmt, data, at)}
  at = values[k + 1]
  for i = 1, k do args[3 * i] = values[i] end
  local bits, found = redis.call('BITFIELD_RO', key, unpack(args)), '1'
  for i = 1, k do if bits[i] == 0 then found = '0'; break end end
  out[u] = found
end
return table.concat(out)
""")

# KEYS[1]: a meta hash. ARGV[1]: ttl (0: none); then field, value pairs, written only when
# the hash holds no layout yet (the first opener wins, atomically). Returns what is stored.
META = Script("""
local meta, ttl = KEYS[1], tonumber(ARGV[1])
if redis.call('HEXISTS', meta, 'layout') == 0 then
  redis.call('HSET', meta, unpack(ARGV, 2))
end
if ttl > 0 then redis.call('EXPIRE', meta, ttl, 'NX') end
return redis.call('HGETALL', meta)
""")

# The generation to use, shared by both ageing scripts: the newest of the caller's clock and
# of what any client wrote (``top``), so no worker goes back a generation. Refused when it is
# past the keys the caller sent (a clock more than one window behind another worker's).
_CURRENT = """
local function current(top_value, g, g0, n)
  local top = top_value and tonumber(top_value) or g
  local cur = math.max(g, top)
  if cur > g0 + n - 1 then
    return nil, 'changewatch: generation ' .. cur .. ' was written by a worker whose clock ' ..
      'is more than one window ahead of this one (generation ' .. g .. '): sync the clocks'
  end
  return cur
end
"""

# Exact, ageing. KEYS[1..n]: the generation sets g0 .. g0+n-1 (the caller's live ones and the
# next); KEYS[n+1]: the top key (newest generation written); KEYS[n+2]: reply key.
# ARGV: digests, reply ms, g0, g (the caller's clock), live L, window ms, now ms, mode
# ("add", "check" or "forget"). One byte per digest: added / present / removed.
AGEING_SET = Script(
    _CURRENT
    + """
local n, mode = #KEYS - 2, ARGV[8]
if mode == 'add' then
  local kept = redis.call('GET', KEYS[n + 2])
  if kept then return kept end
end
local data = ARGV[1]
local g0, g, live = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local window, now = tonumber(ARGV[6]), tonumber(ARGV[7])
local cur, err = current(redis.call('GET', KEYS[n + 1]), g, g0, n)
if not cur then return redis.error_reply(err) end
local first, w, out, wrote = math.max(cur - live + 1, g0) - g0 + 1, cur - g0 + 1, {}, false
for u = 1, #data / 16 do
  local at = (u - 1) * 16
  local d = string.sub(data, at + 1, at + 16)
  if mode == 'forget' then
    local removed = '0'
    for i = 1, n do if redis.call('SREM', KEYS[i], d) == 1 then removed = '1' end end
    out[u] = removed
  else
    local found = '0'
    for i = first, w do
      if redis.call('SISMEMBER', KEYS[i], d) == 1 then found = '1'; break end
    end
    if mode == 'add' then
      if found == '0' then redis.call('SADD', KEYS[w], d); wrote = true; out[u] = '1'
      else out[u] = '0' end
    else
      out[u] = found
    end
  end
end
if wrote then
  local ttl = (cur + live + 1) * window - now
  redis.call('PEXPIRE', KEYS[w], ttl)
  redis.call('SET', KEYS[n + 1], cur, 'PX', ttl)
end
local reply = table.concat(out)
if mode == 'add' then redis.call('SET', KEYS[n + 2], reply, 'PX', ARGV[2]) end
return reply
"""
)

# Bloom, ageing; one block. KEYS[1..n]: the block's generation bitmaps g0 .. g0+n-1, each a
# chain of filters of B bits (filter s at bits [s·B, (s+1)·B)); KEYS[n+1]: the block's hash
# (``top``; ``f:G`` filters and ``n:G`` entries of generation G); KEYS[n+2]: reply key.
# ARGV: k, positions (k uint32 per digest), reply ms, g0, g, live L, window ms, now ms, mode
# ("add" or "check"), B, c (entries a filter takes in this block), most filters a generation
# may have. A generation whose writing filter is full grows by one filter.
AGEING_BLOOM = Script(
    _CURRENT
    + """
local n, mode = #KEYS - 2, ARGV[9]
local hash = KEYS[n + 1]
if mode == 'add' then
  local kept = redis.call('GET', KEYS[n + 2])
  if kept then return kept end
end
local k, data = tonumber(ARGV[1]), ARGV[2]
local g0, g, live = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local window, now = tonumber(ARGV[7]), tonumber(ARGV[8])
local B, cap, most = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local cur, err = current(redis.call('HGET', hash, 'top'), g, g0, n)
if not cur then return redis.error_reply(err) end
local first, w = math.max(cur - live + 1, g0) - g0 + 1, cur - g0 + 1
local filters = {}
for i = first, w do
  filters[i] = tonumber(redis.call('HGET', hash, 'f:' .. (g0 + i - 1)) or '0')
end
local entries = tonumber(redis.call('HGET', hash, 'n:' .. cur) or '0')
local fmt, get, set, out, at, added = '>' .. string.rep('I4', k), {}, {}, {}, 1, 0
for j = 1, k do
  get[3 * j - 2] = 'GET'; get[3 * j - 1] = 'u1'
  set[4 * j - 3] = 'SET'; set[4 * j - 2] = 'u1'; set[4 * j] = 1
end
for u = 1, #data / (4 * k) do
  local values = {struct.unpack(fmt, data, at)}
  at = values[k + 1]
  local found = '0'
  for i = first, w do
    for s = 0, filters[i] - 1 do
      for j = 1, k do get[3 * j] = s * B + values[j] end
      local bits, all = redis.call('BITFIELD_RO', KEYS[i], unpack(get)), true
      for j = 1, k do if bits[j] == 0 then all = false; break end end
      if all then found = '1'; break end
    end
    if found == '1' then break end
  end
  if mode == 'add' and found == '0' then
    if filters[w] == 0 then filters[w] = 1 end
    local s = filters[w] - 1
    for j = 1, k do set[4 * j - 1] = s * B + values[j] end
    redis.call('BITFIELD', KEYS[w], unpack(set))
    entries = entries + 1
    added = added + 1
    if entries >= cap * filters[w] and filters[w] < most then filters[w] = filters[w] + 1 end
    out[u] = '1'
  elseif mode == 'add' then
    out[u] = '0'
  else
    out[u] = found
  end
end
if added > 0 then
  local ttl = (cur + live + 1) * window - now
  redis.call('HSET', hash, 'top', cur, 'f:' .. cur, filters[w], 'n:' .. cur, entries)
  redis.call('PEXPIRE', KEYS[w], ttl)
  redis.call('PEXPIRE', hash, ttl)
  if redis.call('HLEN', hash) > 2 * live + 5 then
    local fields = redis.call('HKEYS', hash)
    for _, field in ipairs(fields) do
      local gen = tonumber(string.match(field, '^[fn]:(-?%d+)$') or '')
      if gen and gen < cur - live + 1 then redis.call('HDEL', hash, field) end
    end
  end
end
local reply = table.concat(out)
if mode == 'add' then redis.call('SET', KEYS[n + 2], reply, 'PX', ARGV[3]) end
return reply
"""
)

SCRIPTS = (SET_ADD, SET_FORGET, BLOOM_ADD, BLOOM_CHECK, META, AGEING_SET, AGEING_BLOOM)
