"""The Lua scripts of :class:`~cogitator_memory.engines.redis.items.RedisItems`, one per item primitive.

Each runs atomically on the server, so a batch is written whole or not at all and a version
check cannot be split from its write. The scripts share the thread scripts' conventions
(:class:`~cogitator_memory.engines.redis.scripts.LuaScript`): ``ARGV[1]`` is the key prefix,
``ARGV[2]`` the TTL (items never expire, so it is unused), and every key derived in a script
carries the prefix, whose hash tag puts it in the slot of the declared key on a cluster.

Key layout under the prefix ``P`` (``SEP`` is the character 0x1F, which scope and slot keys use
between their parts and which no id holds):

``P item:<id>`` (hash)
    ``a`` ``u`` ``p`` ``t`` (agent, user, project, thread; ``""`` when unset), ``sk`` (scope
    key), ``sl`` / ``sj`` (slot and subject keys), ``st`` (status), ``k`` (kind), ``s`` (start:
    ``valid_from`` or else ``recorded_at``), ``vt`` (``valid_to``), ``r`` (``recorded_at``),
    ``x`` (``expired_at``), all times in microseconds since the epoch (``""`` when unset);
    ``e`` (the quoted entry ids, a JSON array), ``n`` (times retrieved), ``lr`` / ``li`` (last
    retrieved, in microseconds and as ISO 8601 text), ``v`` (version), ``b`` (the item as JSON
    without the counters and the version).
``P items:scope:<scope key>``, ``P items:slot:<scope key>SEP<slot key>``,
``P items:subject:<scope key>SEP<subject key>``, ``P items:agent:<agent id>``,
``P items:entry:<entry id>`` (sorted sets)
    Item ids scored by ``recorded_at`` in microseconds.
``P items:scopes:<agent id>``, ``P items:scopes:<agent id>SEP<u|p|t>SEP<user, project or thread id>`` (sets)
    The scope keys of the agent that hold items, all of them and by each limit, for ``within``
    queries.

Reads answer one string, a JSON array of the items (each body with its counters and version put
back), which the client parses in one pass.

Times are compared exactly in Lua (``tcmp`` of :data:`~.scripts.EXACT_TIMES`): doubles hold integer
microseconds exactly only up to 2^53 (years 1685 to 2255), so larger ones are compared digit by
digit. Sorted-set scores are doubles, which round monotonically: a score range is only a first
cut, and every candidate's own fields decide.
"""

from __future__ import annotations

from .scripts import EXACT_TIMES, LuaScript

_ITEMS_HEADER = (
    EXACT_TIMES
    + r"""
local SEP = '\31'
local function item_key(id) return P .. 'item:' .. id end
local function zscope(sk) return P .. 'items:scope:' .. sk end
local function zslot(sk, slot) return P .. 'items:slot:' .. sk .. SEP .. slot end
local function zsubject(sk, subject) return P .. 'items:subject:' .. sk .. SEP .. subject end
local function zagent(agent) return P .. 'items:agent:' .. agent end
local function sscopes(agent) return P .. 'items:scopes:' .. agent end
local function sscopes_by(agent, limit, value) return P .. 'items:scopes:' .. agent .. SEP .. limit .. SEP .. value end
-- The scope sets a scope key belongs to: the agent's, and its user's, project's and thread's.
local function scope_sets(agent, user, project, thread)
  local sets = {sscopes(agent)}
  if user ~= '' then sets[#sets + 1] = sscopes_by(agent, 'u', user) end
  if project ~= '' then sets[#sets + 1] = sscopes_by(agent, 'p', project) end
  if thread ~= '' then sets[#sets + 1] = sscopes_by(agent, 't', thread) end
  return sets
end
local function zentry(entry) return P .. 'items:entry:' .. entry end
local function entries_of(json)
  if not json or json == '' or json == '[]' then return {} end
  return cjson.decode(json)
end
-- An item's JSON from its fields: the body with its counters and version put back.
local function item_json(b, n, li, v)
  local head = '{"times_retrieved":' .. n .. ',"version":' .. v .. ','
  if li ~= '' then head = head .. '"last_retrieved_at":"' .. li .. '",' end
  return head .. string.sub(b, 2)
end
local function json_list(parts) return '[' .. table.concat(parts, ',') .. ']' end
"""
)


def _script(name: str, body: str) -> LuaScript:
    return LuaScript(name, _ITEMS_HEADER + body)


# ARGV: P, TTL, then 19 values per item: id, agent, user, project, thread, scope key, slot key,
# subject key, status, kind, start, valid_to, recorded_at, expired_at, entry ids (JSON),
# times retrieved, last retrieved (microseconds, ISO text), body. Answers {'ok'} or {'taken', id}.
ADD_ITEMS = _script(
    "add_items",
    r"""
local W = 19
for o = 3, #ARGV, W do
  if redis.call('EXISTS', item_key(ARGV[o])) == 1 then return {'taken', ARGV[o]} end
end
for o = 3, #ARGV, W do
  local id, agent, sk, slot, subject, r = ARGV[o], ARGV[o + 1], ARGV[o + 5], ARGV[o + 6], ARGV[o + 7], ARGV[o + 12]
  redis.call('HSET', item_key(id),
    'a', agent, 'u', ARGV[o + 2], 'p', ARGV[o + 3], 't', ARGV[o + 4], 'sk', sk, 'sl', slot, 'sj', subject,
    'st', ARGV[o + 8], 'k', ARGV[o + 9], 's', ARGV[o + 10], 'vt', ARGV[o + 11], 'r', r, 'x', ARGV[o + 13],
    'e', ARGV[o + 14], 'n', ARGV[o + 15], 'lr', ARGV[o + 16], 'li', ARGV[o + 17], 'v', '1', 'b', ARGV[o + 18])
  redis.call('ZADD', zscope(sk), r, id)
  redis.call('ZADD', zslot(sk, slot), r, id)
  redis.call('ZADD', zsubject(sk, subject), r, id)
  redis.call('ZADD', zagent(agent), r, id)
  for _, set in ipairs(scope_sets(agent, ARGV[o + 2], ARGV[o + 3], ARGV[o + 4])) do redis.call('SADD', set, sk) end
  for _, entry in ipairs(entries_of(ARGV[o + 14])) do redis.call('ZADD', zentry(entry), r, id) end
end
return {'ok'}
""",
)

# ARGV: P, TTL, ids. Answers the items found, as one JSON array.
GET_ITEMS = _script(
    "get_items",
    r"""
local out = {}
for i = 3, #ARGV do
  local row = redis.call('HMGET', item_key(ARGV[i]), 'b', 'n', 'li', 'v')
  if row[1] then out[#out + 1] = item_json(row[1], row[2], row[3], row[4]) end
end
return json_list(out)
""",
)

# ARGV: P, TTL, then 14 values per update: id, expected version, new version, status, start,
# valid_to, expired_at, evidence changed (1/0), entry ids (JSON), body, counters given (1/0),
# times retrieved, last retrieved (microseconds, ISO text; written only when given). Answers
# {'missing', id}, {'conflict', id, version} or {'ok', then (times retrieved, last retrieved
# as ISO text) per update}.
UPDATE_ITEMS = _script(
    "update_items",
    r"""
local W = 14
for o = 3, #ARGV, W do
  local v = redis.call('HGET', item_key(ARGV[o]), 'v')
  if not v then return {'missing', ARGV[o]} end
  if v ~= ARGV[o + 1] then return {'conflict', ARGV[o], v} end
end
local out = {'ok'}
for o = 3, #ARGV, W do
  local id = ARGV[o]
  local key = item_key(id)
  if ARGV[o + 7] == '1' then
    local old = redis.call('HMGET', key, 'e', 'r')
    for _, entry in ipairs(entries_of(old[1])) do redis.call('ZREM', zentry(entry), id) end
    for _, entry in ipairs(entries_of(ARGV[o + 8])) do redis.call('ZADD', zentry(entry), old[2], id) end
    redis.call('HSET', key, 'e', ARGV[o + 8])
  end
  redis.call('HSET', key, 'v', ARGV[o + 2], 'st', ARGV[o + 3], 's', ARGV[o + 4], 'vt', ARGV[o + 5],
    'x', ARGV[o + 6], 'b', ARGV[o + 9])
  if ARGV[o + 10] == '1' then
    redis.call('HSET', key, 'n', ARGV[o + 11], 'lr', ARGV[o + 12], 'li', ARGV[o + 13])
  end
  local counts = redis.call('HMGET', key, 'n', 'li')
  out[#out + 1] = counts[1]
  out[#out + 1] = counts[2]
end
return out
""",
)

# ARGV: P, TTL, ids. Answers how many existed.
DELETE_ITEMS = _script(
    "delete_items",
    r"""
local gone = 0
for i = 3, #ARGV do
  local id = ARGV[i]
  local key = item_key(id)
  local f = redis.call('HMGET', key, 'a', 'sk', 'sl', 'sj', 'e', 'u', 'p', 't')
  if f[1] then
    local agent, sk = f[1], f[2]
    redis.call('DEL', key)
    redis.call('ZREM', zscope(sk), id)
    redis.call('ZREM', zslot(sk, f[3]), id)
    redis.call('ZREM', zsubject(sk, f[4]), id)
    redis.call('ZREM', zagent(agent), id)
    for _, entry in ipairs(entries_of(f[5])) do redis.call('ZREM', zentry(entry), id) end
    if redis.call('EXISTS', zscope(sk)) == 0 then
      for _, set in ipairs(scope_sets(agent, f[6], f[7], f[8])) do redis.call('SREM', set, sk) end
    end
    gone = gone + 1
  end
end
return gone
""",
)

# ARGV: P, TTL, at (microseconds), at (ISO text), ids. Answers how many existed.
COUNT_RETRIEVED = _script(
    "count_retrieved",
    r"""
local at, at_text = ARGV[3], ARGV[4]
local counted = 0
for i = 5, #ARGV do
  local key = item_key(ARGV[i])
  local last = redis.call('HGET', key, 'lr')
  if last then
    redis.call('HINCRBY', key, 'n', 1)
    if last == '' or tcmp(at, last) > 0 then redis.call('HSET', key, 'lr', at, 'li', at_text) end
    counted = counted + 1
  end
end
return counted
""",
)

# ARGV: P, TTL, the query as JSON: agent, scopes (scope keys) or within ([user, project,
# thread], "" when unset), and when given: statuses, kinds, slots (slot keys), subject, entries, as_of,
# known_at, after (times in microseconds, as strings), limit (0: all), order ("recorded" or
# "start"). Answers the matching items as one JSON array, unordered: with a limit, at least the
# newest `limit` of them by recorded_at (ties of the cut-off score included), or with order
# "start" exactly the newest `limit` by (start, recorded_at, id), chosen in a heap of `limit`
# as every candidate is read (the sorted sets are scored by recorded_at, not start).
QUERY_ITEMS = _script(
    "query_items",
    r"""
local q = cjson.decode(ARGV[3])
local agent = q.agent
local function set_of(list)
  if list == nil then return nil end
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end
local scopes, statuses, kinds, entries = set_of(q.scopes), set_of(q.statuses), set_of(q.kinds), set_of(q.entries)
local within = q.within
local slots, subject = q.slots, q.subject
local slot_set = set_of(slots)
local as_of, known, after = q.as_of, q.known_at, q.after
local limit = tonumber(q.limit) or 0
local by_start = q.order == 'start' and limit > 0

-- The index keys of one scope key for the query (one per slot when slots are named).
local function variants(sk, keys)
  if slots then
    for _, sl in ipairs(slots) do keys[#keys + 1] = zslot(sk, sl) end
  elseif subject then
    keys[#keys + 1] = zsubject(sk, subject)
  else
    keys[#keys + 1] = zscope(sk)
  end
end
local function split_scope(sk)
  local out, start = {}, 1
  while true do
    local i = string.find(sk, SEP, start, true)
    if not i then out[#out + 1] = string.sub(sk, start) return out end
    out[#out + 1] = string.sub(sk, start, i - 1)
    start = i + 1
  end
end

-- The candidates: the union of the sorted sets of the cheapest index that covers the query.
local best, best_cost
local function consider(keys, extra)
  local cost = extra
  for _, k in ipairs(keys) do cost = cost + redis.call('ZCARD', k) end
  if best == nil or cost < best_cost then best, best_cost = keys, cost end
end
if scopes then
  local keys = {}
  for _, sk in ipairs(q.scopes) do variants(sk, keys) end
  consider(keys, 0)
else
  local agent_key = zagent(agent)
  consider({agent_key}, 0)
  -- Or the scopes within holds, from the smallest scope set of its limits.
  local sets = scope_sets(agent, within[1], within[2], within[3])
  local set, size = nil, nil
  for i = (#sets > 1 and 2 or 1), #sets do
    local n = redis.call('SCARD', sets[i])
    if size == nil or n < size then set, size = sets[i], n end
  end
  if (#sets > 1 or slots or subject) and size < best_cost then
    local keys = {}
    for _, sk in ipairs(redis.call('SMEMBERS', set)) do
      local f = split_scope(sk)
      if (within[1] == '' or f[2] == within[1]) and (within[2] == '' or f[3] == within[2])
          and (within[3] == '' or f[4] == within[3]) then
        variants(sk, keys)
      end
    end
    consider(keys, #keys)
  end
end
if entries then
  local keys = {}
  for _, e in ipairs(q.entries) do keys[#keys + 1] = zentry(e) end
  consider(keys, 0)
end

local out = {}
-- With order "start": a min-heap of the newest `limit` passing items by (start, recorded, id),
-- each {start, recorded, id, body, times retrieved, last retrieved, version}.
local heap = {}
local function newer(a, b)
  local c = tcmp(a[1], b[1])
  if c ~= 0 then return c > 0 end
  c = tcmp(a[2], b[2])
  if c ~= 0 then return c > 0 end
  -- ids byte by byte, as the client orders them (Lua's `>` follows the server's locale)
  local x, y = a[3], b[3]
  for i = 1, math.min(#x, #y) do
    local bx, by = string.byte(x, i), string.byte(y, i)
    if bx ~= by then return bx > by end
  end
  return #x > #y
end
local function keep_newest(e)
  local n = #heap
  local i
  if n < limit then
    n = n + 1
    heap[n] = e
    i = n
    while i > 1 do
      local parent = math.floor(i / 2)
      if not newer(heap[parent], heap[i]) then break end
      heap[parent], heap[i] = heap[i], heap[parent]
      i = parent
    end
  elseif newer(e, heap[1]) then
    heap[1] = e
    i = 1
    while true do
      local l, r, m = 2 * i, 2 * i + 1, i
      if l <= n and newer(heap[m], heap[l]) then m = l end
      if r <= n and newer(heap[m], heap[r]) then m = r end
      if m == i then break end
      heap[i], heap[m] = heap[m], heap[i]
      i = m
    end
  end
end
-- Whether the item passes; a passing item goes to the answer (or to the heap).
local function passes(id)
  local f = redis.call('HMGET', item_key(id),
    'a', 'u', 'p', 't', 'sk', 'st', 'k', 'sl', 'sj', 's', 'vt', 'r', 'x', 'e', 'b', 'n', 'li', 'v')
  if f[1] ~= agent then return false end
  if scopes then
    if not scopes[f[5]] then return false end
  elseif (within[1] ~= '' and f[2] ~= within[1]) or (within[2] ~= '' and f[3] ~= within[2])
      or (within[3] ~= '' and f[4] ~= within[3]) then
    return false
  end
  if statuses and not statuses[f[6]] then return false end
  if kinds and not kinds[f[7]] then return false end
  if slot_set and not slot_set[f[8]] then return false end
  if subject and f[9] ~= subject then return false end
  if entries then
    local hit = false
    for _, e in ipairs(entries_of(f[14])) do
      if entries[e] then hit = true break end
    end
    if not hit then return false end
  end
  if as_of and not (tcmp(f[10], as_of) <= 0 and (f[11] == '' or tcmp(f[11], as_of) > 0)) then return false end
  if known and not (tcmp(f[12], known) <= 0 and (f[13] == '' or tcmp(f[13], known) > 0)) then return false end
  if after and tcmp(f[12], after) <= 0 then return false end
  if by_start then
    keep_newest({f[10], f[12], id, f[15], f[16], f[17], f[18]})
  else
    out[#out + 1] = item_json(f[15], f[16], f[17], f[18])
  end
  return true
end

local verdict = {}
local function take(id)
  local seen = verdict[id]
  if seen == nil then
    seen = passes(id)
    verdict[id] = seen
  end
  return seen
end

-- Scores round monotonically, so the bounds may keep a few too many (never too few).
local lo, hi = after or '-inf', known or '+inf'
for _, key in ipairs(best) do
  if limit == 0 or by_start then
    for _, id in ipairs(redis.call('ZRANGE', key, lo, hi, 'BYSCORE')) do take(id) end
  else
    -- Newest first, until this key gave `limit` matches and the scores fall below the last one's.
    local offset, size, found, cutoff = 0, math.max(2 * limit, 32), 0, nil
    while true do
      local page = redis.call('ZRANGE', key, hi, lo, 'BYSCORE', 'REV', 'LIMIT', offset, size, 'WITHSCORES')
      local stop = false
      for i = 1, #page, 2 do
        local score = tonumber(page[i + 1])
        if cutoff and score < cutoff then stop = true break end
        if take(page[i]) then
          found = found + 1
          if found == limit then cutoff = score end
        end
      end
      if stop or #page < 2 * size then break end
      offset = offset + size
      size = math.min(2 * size, 4096)
    end
  end
end
for _, e in ipairs(heap) do out[#out + 1] = item_json(e[4], e[5], e[6], e[7]) end
return json_list(out)
""",
)

ITEM_SCRIPTS: tuple[LuaScript, ...] = (ADD_ITEMS, GET_ITEMS, UPDATE_ITEMS, DELETE_ITEMS, COUNT_RETRIEVED, QUERY_ITEMS)

__all__ = [
    "ADD_ITEMS",
    "COUNT_RETRIEVED",
    "DELETE_ITEMS",
    "GET_ITEMS",
    "ITEM_SCRIPTS",
    "QUERY_ITEMS",
    "UPDATE_ITEMS",
]
