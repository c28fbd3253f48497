"""The Lua scripts of :class:`~cogitator_memory.engines.redis.threads.RedisAdapter`, one per write or branch read.

Each script runs atomically on the server, so a write touching several keys is all or nothing,
and an ``add_entry`` is one round trip. Every script takes the key prefix as ``ARGV[1]`` and the
TTL in seconds as ``ARGV[2]`` (0: keys never expire); keys that the script derives from an id
share the prefix, which carries a hash tag in cluster mode, so they live in the slot of the
declared keys.

Key layout under the prefix ``P``:

``P thread:<id>`` (hash)
    ``id``, ``a`` (agent), ``c`` / ``u`` (created / updated, microseconds), ``l`` (active leaf,
    ``""`` for none), ``n`` (last seq), ``m:<key>`` (one field per top-level metadata key, JSON).
``P entries:<thread id>`` (sorted set)
    The thread's entry ids scored by ``seq``.
``P entry:<id>`` (hash)
    ``t`` (thread), ``p`` (parent, ``""`` for a root), ``y`` (type), ``c`` (created, us),
    ``s`` (seq), ``k`` (children ids joined by newlines), ``b`` (the entry's JSON without
    ``parent_id`` and ``seq``).
``P threads`` and ``P agent:<agent id>`` (sorted sets)
    Thread ids scored by ``updated_at`` in microseconds, for ``list_threads``.
``P user:<user id>`` (set)
    The ids of the threads whose metadata ``user_id`` is the user (a string) or whose
    ``memory_user_ids`` (a list) names them, for ``threads_of_user``. Every script that writes a
    thread's metadata (``upsert_thread``, ``update_thread``, ``write_fork``) or deletes a thread
    (``delete_thread``) moves the thread between these sets in the same script. The sets never
    expire: ids of threads that expired are pruned when ``threads_of_user`` reads them.
``P users:indexed`` (string)
    Set once every thread written before these sets existed was added to them (see
    :meth:`~cogitator_memory.engines.redis.threads.RedisAdapter.threads_of_user`).

Scripts answer a list whose first element is a status (``ok`` or the failure's name). A branch
walk stops after the thread's entry count: parent links that loop (a damaged store) answer an
error naming the thread, which the adapter reports as ``StoreUnavailableError``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

_HEADER = r"""
local P = ARGV[1]
local TTL = tonumber(ARGV[2])
local function ekey(id) return P .. 'entry:' .. id end
local function tkey(id) return P .. 'thread:' .. id end
local function ikey(id) return P .. 'entries:' .. id end
local function touch(key) if TTL > 0 then redis.call('EXPIRE', key, TTL) end end
local function touch_thread(tid, agent)
  if TTL > 0 then
    redis.call('EXPIRE', tkey(tid), TTL)
    redis.call('EXPIRE', ikey(tid), TTL)
    redis.call('EXPIRE', P .. 'threads', TTL)
    if agent then redis.call('EXPIRE', P .. 'agent:' .. agent, TTL) end
  end
end
local function split(s)
  local out = {}
  if s then for part in string.gmatch(s, '[^\n]+') do out[#out + 1] = part end end
  return out
end
local function del_all(keys)
  for i = 1, #keys, 500 do redis.call('DEL', unpack(keys, i, math.min(i + 499, #keys))) end
end
local function del_entries(tid)
  local ids = redis.call('ZRANGE', ikey(tid), 0, -1)
  local keys = {}
  for i, id in ipairs(ids) do keys[i] = ekey(id) end
  del_all(keys)
  redis.call('DEL', ikey(tid))
end
local function zrem_all(key, members)
  for i = 1, #members, 500 do redis.call('ZREM', key, unpack(members, i, math.min(i + 499, #members))) end
end
local function ukey(user) return P .. 'user:' .. user end
-- The users a thread belongs to: its metadata's user_id (a string) and the strings its
-- memory_user_ids lists. Metadata that is not JSON (a damaged field) names nobody.
local function users_of(tk)
  local f = redis.call('HMGET', tk, 'm:user_id', 'm:memory_user_ids')
  local out = {}
  if f[1] then
    local ok, v = pcall(cjson.decode, f[1])
    if ok and type(v) == 'string' then out[v] = true end
  end
  if f[2] then
    local ok, v = pcall(cjson.decode, f[2])
    if ok and type(v) == 'table' then
      for _, u in ipairs(v) do if type(u) == 'string' then out[u] = true end end
    end
  end
  return out
end
-- Move thread tid from the sets of the users it had (before) to those it has now.
local function reindex_users(tid, before, tk)
  local after = users_of(tk)
  for u in pairs(before) do if not after[u] then redis.call('SREM', ukey(u), tid) end end
  for u in pairs(after) do redis.call('SADD', ukey(u), tid) end
end
local function with_status(status, list)
  local out = {status}
  for i = 1, #list do out[i + 1] = list[i] end
  return out
end
-- The failure of a branch walk that did not reach a root within the thread's entry count:
-- parent links that loop (the same words as cogitator_memory.threads.damage.broken_branch).
local function broken_branch(tid, leaf, steps)
  return redis.error_reply('thread ' .. tid .. ' is damaged: the branch above entry ' .. leaf ..
    ' does not reach a root within ' .. steps .. ' steps (its parent links loop); repair the data' ..
    ' (delete the entries of the loop) or delete the thread')
end
"""


#: Lua for comparing times exactly (``tcmp``), prepended to the scripts that need it: doubles hold
#: integer microseconds exactly only up to 2^53 (years 1685 to 2255), so larger ones are compared
#: digit by digit.
EXACT_TIMES = r"""
-- -1, 0 or 1 as integer microseconds a < b, a == b, a > b (decimal strings, maybe negative)
local function tcmp(a, b)
  local x, y = tonumber(a), tonumber(b)
  if x > -9e15 and x < 9e15 and y > -9e15 and y < 9e15 then
    if x < y then return -1 elseif x > y then return 1 else return 0 end
  end
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if na ~= nb then return na and -1 or 1 end
  local da = na and string.sub(a, 2) or a
  local db = nb and string.sub(b, 2) or b
  local c = 0
  if #da ~= #db then
    c = (#da < #db) and -1 or 1
  else
    local cut = #da - 9
    local h1, h2 = tonumber(string.sub(da, 1, cut)), tonumber(string.sub(db, 1, cut))
    local l1, l2 = tonumber(string.sub(da, cut + 1)), tonumber(string.sub(db, cut + 1))
    if h1 ~= h2 then c = (h1 < h2) and -1 or 1
    elseif l1 ~= l2 then c = (l1 < l2) and -1 or 1 end
  end
  if na then c = -c end
  return c
end
"""


@dataclass(frozen=True)
class LuaScript:
    """A script's source (with the shared header) and the SHA1 that EVALSHA calls it by."""

    name: str
    body: str
    source: str = field(init=False)
    sha: str = field(init=False)

    def __post_init__(self) -> None:
        source = _HEADER + self.body
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "sha", hashlib.sha1(source.encode()).hexdigest())


# KEYS: thread, threads index. ARGV: P, TTL, thread id, agent, now, then (field, json) pairs.
UPSERT_THREAD = LuaScript(
    "upsert_thread",
    r"""
local tk = KEYS[1]
local tid, agent, now = ARGV[3], ARGV[4], ARGV[5]
local existing = redis.call('HGET', tk, 'a')
local before = users_of(tk)
if existing then
  agent = existing
else
  redis.call('HSET', tk, 'id', tid, 'a', agent, 'c', now, 'l', '', 'n', 0)
end
redis.call('HSET', tk, 'u', now)
for i = 6, #ARGV, 2 do redis.call('HSET', tk, ARGV[i], ARGV[i + 1]) end
reindex_users(tid, before, tk)
redis.call('ZADD', KEYS[2], now, tid)
redis.call('ZADD', P .. 'agent:' .. agent, now, tid)
touch_thread(tid, agent)
return with_status('ok', redis.call('HGETALL', tk))
""",
)

# KEYS: thread, threads index. ARGV: P, TTL, thread id, now, replace (1/0), then (field, json) pairs.
UPDATE_THREAD = LuaScript(
    "update_thread",
    r"""
local tk = KEYS[1]
local tid, now = ARGV[3], ARGV[4]
local agent = redis.call('HGET', tk, 'a')
if not agent then return {'missing'} end
local before = users_of(tk)
if ARGV[5] == '1' then
  for _, f in ipairs(redis.call('HKEYS', tk)) do
    if string.sub(f, 1, 2) == 'm:' then redis.call('HDEL', tk, f) end
  end
end
redis.call('HSET', tk, 'u', now)
for i = 6, #ARGV, 2 do redis.call('HSET', tk, ARGV[i], ARGV[i + 1]) end
reindex_users(tid, before, tk)
redis.call('ZADD', KEYS[2], now, tid)
redis.call('ZADD', P .. 'agent:' .. agent, now, tid)
touch_thread(tid, agent)
return with_status('ok', redis.call('HGETALL', tk))
""",
)

# KEYS: thread, threads index. ARGV: P, TTL, thread id.
DELETE_THREAD = LuaScript(
    "delete_thread",
    r"""
local tk = KEYS[1]
local tid = ARGV[3]
local agent = redis.call('HGET', tk, 'a')
del_entries(tid)
redis.call('ZREM', KEYS[2], tid)
for u in pairs(users_of(tk)) do redis.call('SREM', ukey(u), tid) end
if not agent then return {'missing'} end
redis.call('ZREM', P .. 'agent:' .. agent, tid)
redis.call('DEL', tk)
return {'ok'}
""",
)

# KEYS: the index to scan (all threads or one agent's). ARGV: P, TTL, max score, min score
# (ZRANGE BYSCORE syntax), cursor score ('' for none), cursor id, limit.
# Threads in (updated_at desc, id desc) order strictly after the cursor; expired ones are pruned.
SCAN_THREADS = LuaScript(
    "scan_threads",
    r"""
local hi, lo = ARGV[3], ARGV[4]
local after_us = tonumber(ARGV[5])
local after_id = ARGV[6]
local limit = tonumber(ARGV[7])
local function bytes_lt(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local out, dead = {'ok'}, {}
local found, offset, batch = 0, 0, limit + 16
while found < limit do
  local page = redis.call('ZRANGE', KEYS[1], hi, lo, 'BYSCORE', 'REV', 'WITHSCORES', 'LIMIT', offset, batch)
  if #page == 0 then break end
  for i = 1, #page, 2 do
    local id, score = page[i], tonumber(page[i + 1])
    if not (after_us and score == after_us and not bytes_lt(id, after_id)) then
      local h = redis.call('HGETALL', tkey(id))
      if #h == 0 then
        dead[#dead + 1] = id
      else
        out[#out + 1] = #h
        for j = 1, #h do out[#out + 1] = h[j] end
        found = found + 1
        if found >= limit then break end
      end
    end
  end
  offset = offset + batch
  if #page < 2 * batch then break end
end
if #dead > 0 then
  zrem_all(KEYS[1], dead)
  zrem_all(P .. 'threads', dead)
end
return out
""",
)

# KEYS: thread, its entry index. ARGV: P, TTL, thread id, entry id, parent id, where (1: after
# the parent, 0: after the active leaf, r: a new root), activate (1/0), type, created (us), body.
# An entry id that is taken answers 'taken', unless it holds this very entry (the same thread,
# time and body): a command the client sent again after a lost reply answers as the first did.
ADD_ENTRY = LuaScript(
    "add_entry",
    r"""
local tk, ik = KEYS[1], KEYS[2]
local tid, eid = ARGV[3], ARGV[4]
local agent = redis.call('HGET', tk, 'a')
if not agent then return {'missing'} end
local ek = ekey(eid)
local prev = redis.call('HMGET', ek, 't', 'p', 's', 'c', 'b')
if prev[1] then
  if prev[1] == tid and prev[4] == ARGV[9] and prev[5] == ARGV[10] then return {'ok', prev[3], prev[2]} end
  return {'taken'}
end
local parent
if ARGV[6] == 'r' then
  parent = ''
elseif ARGV[6] == '1' then
  parent = ARGV[5]
  local owner = redis.call('HGET', ekey(parent), 't')
  if not owner then return {'noparent'} end
  if owner ~= tid then return {'otherparent'} end
else
  parent = redis.call('HGET', tk, 'l') or ''
  if parent ~= '' and redis.call('EXISTS', ekey(parent)) == 0 then parent = '' end
end
local seq = redis.call('HINCRBY', tk, 'n', 1)
redis.call('HSET', ek, 't', tid, 'p', parent, 'y', ARGV[8], 'c', ARGV[9], 's', seq, 'b', ARGV[10])
if parent ~= '' then
  local pk = ekey(parent)
  local kids = redis.call('HGET', pk, 'k')
  if kids and kids ~= '' then kids = kids .. '\n' .. eid else kids = eid end
  redis.call('HSET', pk, 'k', kids)
end
redis.call('ZADD', ik, seq, eid)
if ARGV[7] == '1' then redis.call('HSET', tk, 'l', eid) end
if TTL > 0 then
  redis.call('EXPIRE', ek, TTL)
  touch_thread(tid, agent)
end
return {'ok', seq, parent}
""",
)

# KEYS: thread, its entry index. ARGV: P, TTL, limit, before (us or ''), after (us or ''),
# then the wanted types (none: every type). Answers flat (id, parent, seq, body) groups in seq
# order; entries that expired are pruned from the index.
GET_ENTRIES = LuaScript(
    "get_entries",
    r"""
local tk, ik = KEYS[1], KEYS[2]
if redis.call('EXISTS', tk) == 0 then return {'missing'} end
local limit = tonumber(ARGV[3])
local before, after = tonumber(ARGV[4]), tonumber(ARGV[5])
local want = nil
if #ARGV >= 6 then
  want = {}
  for i = 6, #ARGV do want[ARGV[i]] = true end
end
local picked, dead = {}, {}
local function consider(id)
  local f = redis.call('HMGET', ekey(id), 'y', 'c', 'p', 's', 'b')
  if not f[1] then dead[#dead + 1] = id; return false end
  if want and not want[f[1]] then return false end
  local c = tonumber(f[2])
  if before and c >= before then return false end
  if after and c <= after then return false end
  picked[#picked + 1] = {id, f[3], f[4], f[5]}
  return true
end
if limit > 0 then
  local start, batch = 0, math.max(limit, 32)
  while #picked < limit do
    local ids = redis.call('ZREVRANGE', ik, start, start + batch - 1)
    for _, id in ipairs(ids) do
      if consider(id) and #picked >= limit then break end
    end
    if #ids < batch then break end
    start = start + batch
  end
else
  for _, id in ipairs(redis.call('ZRANGE', ik, 0, -1)) do consider(id) end
end
if #dead > 0 then zrem_all(ik, dead) end
local out = {'ok'}
local n = #picked
for i = 1, n do
  local e = limit > 0 and picked[n - i + 1] or picked[i]
  out[#out + 1] = e[1]; out[#out + 1] = e[2]; out[#out + 1] = e[3]; out[#out + 1] = e[4]
end
return out
""",
)

# KEYS: thread, its entry index. ARGV: P, TTL, thread id, leaf ('' for the active leaf), limit,
# before (us or ''), then the wanted types (none: every type). Walks parents from the leaf,
# reading only the branch; answers (id, parent, seq, body) groups from the leaf up.
GET_PATH = LuaScript(
    "get_path",
    r"""
local tk, ik = KEYS[1], KEYS[2]
local tid, cur = ARGV[3], ARGV[4]
local limit = tonumber(ARGV[5])
local before = tonumber(ARGV[6])
if redis.call('EXISTS', tk) == 0 then return {'missing'} end
if cur == '' then
  cur = redis.call('HGET', tk, 'l') or ''
elseif redis.call('HGET', ekey(cur), 't') ~= tid then
  return {'noleaf'}
end
local want = nil
if #ARGV >= 7 then
  want = {}
  for i = 7, #ARGV do want[ARGV[i]] = true end
end
local out, found = {'ok'}, 0
local start = cur
local steps, most = 0, redis.call('ZCARD', ik) + 1
while cur ~= '' do
  if steps >= most then return broken_branch(tid, start, steps) end
  steps = steps + 1
  local f = redis.call('HMGET', ekey(cur), 'y', 'c', 'p', 's', 'b')
  if not f[1] then break end
  if (not want or want[f[1]]) and (not before or tonumber(f[2]) < before) then
    out[#out + 1] = cur; out[#out + 1] = f[3]; out[#out + 1] = f[4]; out[#out + 1] = f[5]
    found = found + 1
    if limit > 0 and found >= limit then break end
  end
  cur = f[3]
end
return out
""",
)

# KEYS: the entry. ARGV: P, TTL, entry id. Splices the entry out of its branch.
DELETE_ENTRY = LuaScript(
    "delete_entry",
    r"""
local ek = KEYS[1]
local eid = ARGV[3]
local f = redis.call('HMGET', ek, 't', 'p', 's', 'b', 'k')
if not f[1] then return {'missing'} end
local tid, parent = f[1], f[2]
local moved = {}
for _, kid in ipairs(split(f[5])) do
  if redis.call('EXISTS', ekey(kid)) == 1 then
    redis.call('HSET', ekey(kid), 'p', parent)
    moved[#moved + 1] = kid
  end
end
if parent ~= '' and redis.call('EXISTS', ekey(parent)) == 1 then
  local kids = {}
  for _, kid in ipairs(split(redis.call('HGET', ekey(parent), 'k'))) do
    if kid ~= eid then kids[#kids + 1] = kid end
  end
  for _, kid in ipairs(moved) do kids[#kids + 1] = kid end
  redis.call('HSET', ekey(parent), 'k', table.concat(kids, '\n'))
end
redis.call('DEL', ek)
redis.call('ZREM', ikey(tid), eid)
local tk = tkey(tid)
local t = redis.call('HMGET', tk, 'a', 'l')
if t[2] == eid then redis.call('HSET', tk, 'l', parent) end
if t[1] then touch_thread(tid, t[1]) end
return {'ok', tid, parent, f[3], f[4]}
""",
)

# KEYS: thread, its entry index. ARGV: P, TTL, thread id.
CLEAR_THREAD = LuaScript(
    "clear_thread",
    r"""
local tk = KEYS[1]
local tid = ARGV[3]
local agent = redis.call('HGET', tk, 'a')
if not agent then return {'missing'} end
del_entries(tid)
redis.call('HSET', tk, 'l', '')
touch_thread(tid, agent)
return {'ok'}
""",
)

# KEYS: thread, its entry index. ARGV: P, TTL, thread id, entry id, on active path (1/0).
SET_ACTIVE_LEAF = LuaScript(
    "set_active_leaf",
    r"""
local tk, ik = KEYS[1], KEYS[2]
local tid, eid = ARGV[3], ARGV[4]
local t = redis.call('HMGET', tk, 'a', 'l')
if not t[1] then return {'missing'} end
if redis.call('HGET', ekey(eid), 't') ~= tid then return {'noentry'} end
if ARGV[5] == '1' then
  local cur, found = t[2] or '', false
  local steps, most = 0, redis.call('ZCARD', ik) + 1
  while cur ~= '' do
    if cur == eid then found = true; break end
    if steps >= most then return broken_branch(tid, t[2], steps) end
    steps = steps + 1
    cur = redis.call('HGET', ekey(cur), 'p') or ''
  end
  if not found then return {'offpath'} end
end
redis.call('HSET', tk, 'l', eid)
touch_thread(tid, t[1])
return with_status('ok', redis.call('HGETALL', tk))
""",
)

# KEYS: the entry. ARGV: P, TTL, body.
REPLACE_ENTRY = LuaScript(
    "replace_entry",
    r"""
local ek = KEYS[1]
local tid = redis.call('HGET', ek, 't')
if not tid then return {'missing'} end
redis.call('HSET', ek, 'b', ARGV[3])
touch(ek)
touch_thread(tid, redis.call('HGET', tkey(tid), 'a'))
return {'ok'}
""",
)

# KEYS: origin thread, fork thread, fork's entry index, threads index. ARGV: P, TTL, origin id,
# fork id, agent, now, leaf, forks field seen ('1' present / '0' absent), its value, new forks
# JSON, forked_from JSON, number of metadata pairs, the pairs, then per entry:
# id, parent, type, created, seq, children, body.
WRITE_FORK = LuaScript(
    "write_fork",
    r"""
local ok_, fk, fik, threads = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local origin, fid, agent, now, leaf = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local oagent = redis.call('HGET', ok_, 'a')
if not oagent then return {'missing'} end
if redis.call('EXISTS', fk) == 1 then
  local f = redis.call('HMGET', fk, 'c', 'm:forked_from')
  if f[1] == now and f[2] == ARGV[11] then return with_status('ok', redis.call('HGETALL', fk)) end
  return {'taken'}
end
local seen = redis.call('HGET', ok_, 'm:memory_forks')
if (ARGV[8] == '1') ~= (seen ~= false) or (seen and seen ~= ARGV[9]) then return {'retry'} end
local npairs = tonumber(ARGV[12])
redis.call('HSET', fk, 'id', fid, 'a', agent, 'c', now, 'u', now, 'l', leaf, 'n', 0)
local i = 13
for _ = 1, npairs do
  redis.call('HSET', fk, ARGV[i], ARGV[i + 1])
  i = i + 2
end
local count = 0
while i + 6 <= #ARGV do
  local ek = ekey(ARGV[i])
  redis.call('HSET', ek, 't', fid, 'p', ARGV[i + 1], 'y', ARGV[i + 2], 'c', ARGV[i + 3], 's', ARGV[i + 4],
    'k', ARGV[i + 5], 'b', ARGV[i + 6])
  redis.call('ZADD', fik, ARGV[i + 4], ARGV[i])
  touch(ek)
  count = count + 1
  i = i + 7
end
redis.call('HSET', fk, 'n', count)
reindex_users(fid, {}, fk)
redis.call('ZADD', threads, now, fid)
redis.call('ZADD', P .. 'agent:' .. agent, now, fid)
redis.call('HSET', ok_, 'm:memory_forks', ARGV[10], 'u', now)
redis.call('ZADD', threads, now, origin)
redis.call('ZADD', P .. 'agent:' .. oagent, now, origin)
touch_thread(fid, agent)
touch_thread(origin, oagent)
return with_status('ok', redis.call('HGETALL', fk))
""",
)

# KEYS: the user's set. ARGV: P, TTL, user id. Answers (size, flat thread hash) groups of the
# threads in the set that still name the user; ids of threads gone (expired) or no longer naming
# the user are dropped from the set.
THREADS_OF_USER = LuaScript(
    "threads_of_user",
    r"""
local uk, user = KEYS[1], ARGV[3]
local out, stale = {'ok'}, {}
for _, tid in ipairs(redis.call('SMEMBERS', uk)) do
  local tk = tkey(tid)
  if users_of(tk)[user] then
    local h = redis.call('HGETALL', tk)
    out[#out + 1] = #h
    for j = 1, #h do out[#out + 1] = h[j] end
  else
    stale[#stale + 1] = tid
  end
end
for i = 1, #stale, 500 do redis.call('SREM', uk, unpack(stale, i, math.min(i + 499, #stale))) end
return out
""",
)

# KEYS: the threads index. ARGV: P, TTL, then thread ids. Adds each thread that still exists to
# the sets of its users (the backfill of threads written before the sets existed; adding twice
# is harmless, so it may run again or alongside writes).
INDEX_USERS = LuaScript(
    "index_users",
    r"""
local n = 0
for i = 3, #ARGV do
  local tid = ARGV[i]
  local tk = tkey(tid)
  if redis.call('EXISTS', tk) == 1 then
    for u in pairs(users_of(tk)) do redis.call('SADD', ukey(u), tid) end
    n = n + 1
  end
end
return {'ok', n}
""",
)

ALL_SCRIPTS: tuple[LuaScript, ...] = (
    UPSERT_THREAD,
    UPDATE_THREAD,
    DELETE_THREAD,
    SCAN_THREADS,
    ADD_ENTRY,
    GET_ENTRIES,
    GET_PATH,
    DELETE_ENTRY,
    CLEAR_THREAD,
    SET_ACTIVE_LEAF,
    REPLACE_ENTRY,
    WRITE_FORK,
    THREADS_OF_USER,
    INDEX_USERS,
)

__all__ = [
    "ADD_ENTRY",
    "ALL_SCRIPTS",
    "CLEAR_THREAD",
    "DELETE_ENTRY",
    "DELETE_THREAD",
    "GET_ENTRIES",
    "GET_PATH",
    "INDEX_USERS",
    "REPLACE_ENTRY",
    "SCAN_THREADS",
    "SET_ACTIVE_LEAF",
    "THREADS_OF_USER",
    "UPDATE_THREAD",
    "UPSERT_THREAD",
    "WRITE_FORK",
    "LuaScript",
]
