"""The Lua scripts of :class:`~cogitator_memory.engines.redis.recall.RedisRecallIndex`, one per primitive.

Each runs atomically on the server, so a batch of records and every index it touches is written
whole, and a search reads one consistent index. They share the thread scripts' conventions
(:class:`~cogitator_memory.engines.redis.scripts.LuaScript`): ``ARGV[1]`` is the key prefix,
``ARGV[2]`` the TTL (records never expire, so it is unused), and every key a script derives
carries the prefix, whose hash tag puts it in the slot of the declared key (``P recall:stats``)
on a cluster: the whole index of one prefix lives in one slot.

Key layout under the prefix ``P`` (an absent user or thread is ``""``):

``P recall:rec:<id>`` (hash)
    ``u`` ``t`` (user, thread), ``sc`` (the record's scope number, below), ``s``
    (``said_at``), ``ts`` / ``te`` (the named time's start and end), times in microseconds since
    the epoch (``""`` when unset); ``n`` (how many terms), ``tm`` (the terms, a JSON array in order
    with repeats), ``b`` (the record as JSON without its terms).
``P recall:term:<term>`` (hash)
    The postings of one term: record id -> ``"<count> <record length> <scope number> <seq>"``,
    all a keyword search needs of a record to score it, filter it and tell the records indexed
    last (``seq``, the write sequence of ``P recall:stats`` when the record was written). The
    hash's length is the term's document frequency. Postings written before ``seq`` was kept
    have three fields and are read as ``seq`` 0, indexed before any other (nothing migrates
    them: writing the record again gives them a ``seq``).
``P recall:sig`` / ``P recall:sid`` / ``P recall:sidn`` (hashes)
    Scope numbers: a record's scope (kind, status, agent, user, thread joined by the character
    0x1F, which no id holds) -> its number, the number -> the scope, and the number -> how many
    records have it. A search decides each number once (one ``HGET``) instead of reading every
    record its postings name; a number no record has any more is dropped, so a deleted user's
    id does not stay behind.
``P recall:said``, ``P recall:u:<user>``, ``P recall:nouser``, ``P recall:t:<thread>``,
``P recall:nothread`` (sorted sets)
    Record ids scored by ``said_at``: all of them, by user (and those of no user), by thread (and
    those of no thread). A search scoped to a user walks its user's set and the no-user set; to a
    thread (without a user), its thread's set and the no-thread set; deleting a user's or a
    thread's records reads its set.
``P recall:moments`` (by ``time_start``), ``P recall:spans`` (by ``time_end``) (sorted sets)
    The records that name a moment (no ``time_end``) or a range, for the time channel.
``P recall:stats`` (hash)
    ``n`` (records) and ``len`` (their total length in terms), kept by every write, ``sid``
    (the last scope number given) and ``seq`` (the last write sequence given: each record
    written gets the next, so a record written again is indexed after every other).
``P recall:state`` (hash)
    The indexer's small strings (read and written by plain commands, not scripts).

Sorted-set scores are doubles, which round monotonically past 2^53 microseconds: a score range
is only a first cut and the record's own fields decide (``tcmp`` of
:data:`~.scripts.EXACT_TIMES`). Ties are broken by record id compared byte by byte (``idless``),
which is the order of Python's ``str`` for UTF-8 text whatever the server's locale.
"""

from __future__ import annotations

from .scripts import EXACT_TIMES, LuaScript

_RECALL_HEADER = (
    EXACT_TIMES
    + r"""
local function rkey(id) return P .. 'recall:rec:' .. id end
local function pkey(term) return P .. 'recall:term:' .. term end
local ZALL = P .. 'recall:said'
local ZMOMENTS = P .. 'recall:moments'
local ZSPANS = P .. 'recall:spans'
local STATS = P .. 'recall:stats'
local SIG = P .. 'recall:sig'
local SID = P .. 'recall:sid'
local SIDN = P .. 'recall:sidn'
local SEP = '\31'
local function zuser(u) if u == '' then return P .. 'recall:nouser' end return P .. 'recall:u:' .. u end
local function zthread(t) if t == '' then return P .. 'recall:nothread' end return P .. 'recall:t:' .. t end
local PAGE = 256

-- A posting's fields: count, record length, scope number (text) and write sequence (0 for a
-- posting of three fields, written before the sequence was kept); nil when malformed.
local function posting(v)
  local tf, len, sid, seq = string.match(v, '^(%d+) (%d+) (%d+) ?(%d*)$')
  if not sid then return nil end
  return tonumber(tf), tonumber(len), sid, tonumber(seq) or 0
end

-- Whether id a sorts before id b, byte by byte (Python's order of str for UTF-8 text).
local function idless(a, b)
  if a == b then return false end
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The terms of a record (its JSON array): term -> count, and how many terms in all.
local function counts(tm)
  local terms = cjson.decode(tm)
  local tf = {}
  for _, term in ipairs(terms) do tf[term] = (tf[term] or 0) + 1 end
  return tf, #terms
end

-- Remove record id from every index; 1 and its length when it existed, else 0, 0.
local function unindex(id)
  local key = rkey(id)
  local f = redis.call('HMGET', key, 'u', 't', 'ts', 'te', 'tm', 'sc')
  if not f[5] then return 0, 0 end
  if redis.call('HINCRBY', SIDN, f[6], -1) <= 0 then
    redis.call('HDEL', SIDN, f[6])
    local sig = redis.call('HGET', SID, f[6])
    redis.call('HDEL', SID, f[6])
    if sig then redis.call('HDEL', SIG, sig) end
  end
  local tf, n = counts(f[5])
  for term in pairs(tf) do redis.call('HDEL', pkey(term), id) end
  redis.call('ZREM', ZALL, id)
  redis.call('ZREM', zuser(f[1]), id)
  redis.call('ZREM', zthread(f[2]), id)
  if f[3] ~= '' then
    if f[4] == '' then redis.call('ZREM', ZMOMENTS, id) else redis.call('ZREM', ZSPANS, id) end
  end
  redis.call('DEL', key)
  return 1, n
end

-- Remove the records, keeping the stats; how many existed.
local function unindex_all(ids)
  local gone, len = 0, 0
  for _, id in ipairs(ids) do
    local g, n = unindex(id)
    gone, len = gone + g, len + n
  end
  if gone > 0 then
    redis.call('HINCRBY', STATS, 'n', -gone)
    redis.call('HINCRBY', STATS, 'len', -len)
  end
  return gone
end

-- The filter at ARGV[o..o+4]: agent, user, thread ('' for no scoping on it), kinds
-- (space-separated, '' for all) and statuses (space-separated).
local function parse_filter(o)
  local f = {a = ARGV[o], u = ARGV[o + 1], t = ARGV[o + 2], statuses = {}, verdicts = {}}
  if ARGV[o + 3] ~= '' then
    f.kinds = {}
    for k in string.gmatch(ARGV[o + 3], '%S+') do f.kinds[k] = true end
  end
  for s in string.gmatch(ARGV[o + 4], '%S+') do f.statuses[s] = true end
  return f
end

-- The scope number of a record with these fields, given a new one when no record has it yet.
local function scope_number(k, st, a, u, t)
  local sig = k .. SEP .. st .. SEP .. a .. SEP .. u .. SEP .. t
  local sid = redis.call('HGET', SIG, sig)
  if not sid then
    sid = tostring(redis.call('HINCRBY', STATS, 'sid', 1))
    redis.call('HSET', SIG, sig, sid)
    redis.call('HSET', SID, sid, sig)
  end
  redis.call('HINCRBY', SIDN, sid, 1)
  return sid
end

-- cogitator_memory.index.records.record_in_scope over a record's fields.
local function in_scope(f, k, st, a, u, t)
  return (f.a == '' or a == '' or a == f.a)
    and (f.u == '' or u == '' or u == f.u)
    and (f.t == '' or t == '' or t == f.t)
    and (f.kinds == nil or f.kinds[k] == true)
    and f.statuses[st] == true
end

-- Whether the filter lets records of scope number sid through (decided once per number).
local function scope_ok(f, sid)
  local ok = f.verdicts[sid]
  if ok == nil then
    local sig = redis.call('HGET', SID, sid)
    ok = false
    if sig then
      local k, st, a, u, t = string.match(sig, '^([^\31]*)\31([^\31]*)\31([^\31]*)\31([^\31]*)\31([^\31]*)$')
      ok = k ~= nil and in_scope(f, k, st, a, u, t)
    end
    f.verdicts[sid] = ok
  end
  return ok
end

-- The sorted sets (by said_at) that hold every record the filter may let through.
local function routes(f)
  if f.u ~= '' then return {zuser(f.u), zuser('')} end
  if f.t ~= '' then return {zthread(f.t), zthread('')} end
  return {ZALL}
end

-- A heap keeping the best `cap` entries of a stream by `better` (its top is the worst kept).
local function heap_new(cap, better) return {n = 0, cap = cap, better = better} end
local function heap_push(h, x)
  local better = h.better
  if h.n < h.cap then
    h.n = h.n + 1
    local i = h.n
    h[i] = x
    while i > 1 do
      local p = math.floor(i / 2)
      if better(h[p], h[i]) then h[p], h[i] = h[i], h[p]; i = p else break end
    end
  elseif better(x, h[1]) then
    h[1] = x
    local i = 1
    while true do
      local l, r, w = 2 * i, 2 * i + 1, i
      if l <= h.n and better(h[w], h[l]) then w = l end
      if r <= h.n and better(h[w], h[r]) then w = r end
      if w == i then break end
      h[i], h[w] = h[w], h[i]
      i = w
    end
  end
end
local function heap_sorted(h)
  local out = {}
  for i = 1, h.n do out[i] = h[i] end
  table.sort(out, h.better)
  return out
end
"""
)


def _script(name: str, body: str) -> LuaScript:
    return LuaScript(name, _RECALL_HEADER + body)


# KEYS: stats. ARGV: P, TTL, then 11 values per record: id, kind, agent, user, thread, status,
# said, time start, time end (microseconds or ''), terms (JSON array), body. Each record gets the
# next write sequence (in the batch's order), kept in its postings. Answers 'ok'.
PUT = _script(
    "recall_put",
    r"""
local W = 11
local ids = {}
for o = 3, #ARGV, W do ids[#ids + 1] = ARGV[o] end
unindex_all(ids)
local seq = redis.call('HINCRBY', STATS, 'seq', #ids) - #ids
local added, len = 0, 0
for o = 3, #ARGV, W do
  local id, u, t, s, ts, te, tm = ARGV[o], ARGV[o + 3], ARGV[o + 4], ARGV[o + 6], ARGV[o + 7], ARGV[o + 8], ARGV[o + 9]
  local sid = scope_number(ARGV[o + 1], ARGV[o + 5], ARGV[o + 2], u, t)
  local tf, n = counts(tm)
  seq = seq + 1
  local tail = ' ' .. n .. ' ' .. sid .. ' ' .. seq
  for term, c in pairs(tf) do redis.call('HSET', pkey(term), id, c .. tail) end
  redis.call('HSET', rkey(id), 'u', u, 't', t, 'sc', sid, 's', s, 'ts', ts, 'te', te, 'n', n, 'tm', tm,
    'b', ARGV[o + 10])
  redis.call('ZADD', ZALL, s, id)
  redis.call('ZADD', zuser(u), s, id)
  redis.call('ZADD', zthread(t), s, id)
  if ts ~= '' then
    if te == '' then redis.call('ZADD', ZMOMENTS, ts, id) else redis.call('ZADD', ZSPANS, te, id) end
  end
  added, len = added + 1, len + n
end
redis.call('HINCRBY', STATS, 'n', added)
redis.call('HINCRBY', STATS, 'len', len)
return 'ok'
""",
)

# KEYS: stats. ARGV: P, TTL, ids. Answers body, terms, body, terms... of the records found.
GET = _script(
    "recall_get",
    r"""
local out = {}
for i = 3, #ARGV do
  local f = redis.call('HMGET', rkey(ARGV[i]), 'b', 'tm')
  if f[1] then out[#out + 1] = f[1]; out[#out + 1] = f[2] end
end
return out
""",
)

# KEYS: stats. ARGV: P, TTL, ids. Answers how many existed.
DELETE = _script(
    "recall_delete",
    r"""
local ids = {}
for i = 3, #ARGV do ids[#ids + 1] = ARGV[i] end
return unindex_all(ids)
""",
)

# KEYS: stats. ARGV: P, TTL, 'user_id' or 'thread_id', the id. Answers how many existed.
DELETE_SCOPE = _script(
    "recall_delete_scope",
    r"""
local key = ARGV[3] == 'user_id' and zuser(ARGV[4]) or zthread(ARGV[4])
return unindex_all(redis.call('ZRANGE', key, 0, -1))
""",
)

# KEYS: stats. ARGV: P, TTL, terms. Answers records, total length, then each term's postings count.
STATS_OF = _script(
    "recall_stats",
    r"""
local f = redis.call('HMGET', STATS, 'n', 'len')
local out = {tonumber(f[1] or '0'), tonumber(f[2] or '0')}
for i = 3, #ARGV do out[#out + 1] = redis.call('HLEN', pkey(ARGV[i])) end
return out
""",
)

# KEYS: stats. ARGV: P, TTL, average length, k1, b, limit, newest (0 for none), the filter (5
# values), then (term, idf) pairs. Reads the postings of those terms only (each names the record's
# length, scope number and write sequence); with newest > 0, of a term holding more, only the
# `newest` written last (highest sequence, ties by id) are kept, whatever their scope. Decides
# each scope number once and sums BM25 for the records in scope. Answers id, score (text), body,
# terms... of the best `limit`, best first, ties by id.
KEYWORD = _script(
    "recall_keyword",
    r"""
local avg, k1, b, limit = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local newest = tonumber(ARGV[7])
local f = parse_filter(8)
local per_len = avg > 0 and b / avg or 0
local fixed = 1 - b + (avg > 0 and 0 or b)
local score, ids = {}, {}
local function add(id, idf, tf, len, sid)
  if not scope_ok(f, sid) then return end
  local s = idf * tf * (k1 + 1) / (tf + k1 * (fixed + per_len * len))
  local was = score[id]
  if was == nil then ids[#ids + 1] = id; score[id] = s else score[id] = was + s end
end
local function later(x, y)
  if x.q ~= y.q then return x.q > y.q end
  return idless(x.id, y.id)
end
for o = 13, #ARGV, 2 do
  local idf = tonumber(ARGV[o + 1])
  local postings = redis.call('HGETALL', pkey(ARGV[o]))
  if newest > 0 and #postings > 2 * newest then
    local h = heap_new(newest, later)
    for i = 1, #postings, 2 do
      local tf, len, sid, seq = posting(postings[i + 1])
      local id, top = postings[i], h[1]
      -- a table only for a posting the heap keeps (most are older than its worst once full)
      if sid and (h.n < newest or seq > top.q or (seq == top.q and idless(id, top.id))) then
        heap_push(h, {id = id, q = seq, tf = tf, len = len, sid = sid})
      end
    end
    for i = 1, h.n do
      local x = h[i]
      add(x.id, idf, x.tf, x.len, x.sid)
    end
  else
    for i = 1, #postings, 2 do
      local tf, len, sid = posting(postings[i + 1])
      if sid then add(postings[i], idf, tf, len, sid) end
    end
  end
end
local function better(x, y)
  if x.s ~= y.s then return x.s > y.s end
  return idless(x.id, y.id)
end
local h = heap_new(limit, better)
for _, id in ipairs(ids) do
  if score[id] > 0 then heap_push(h, {id = id, s = score[id]}) end
end
local out = {}
for _, x in ipairs(heap_sorted(h)) do
  local r = redis.call('HMGET', rkey(x.id), 'b', 'tm')
  out[#out + 1] = x.id
  out[#out + 1] = string.format('%.17g', x.s)
  out[#out + 1] = r[1]
  out[#out + 1] = r[2]
end
return out
""",
)

# KEYS: stats. ARGV: P, TTL, start, end (microseconds), limit, the filter (5 values). Walks the
# filter's sets by said_at from `end` down, newest first, until `limit` records in scope were
# said in [start, end) (and the ties of the last), then the records naming a moment in the range
# or a range ending after its start. Answers body, terms... of the newest `limit`, ties by id.
TIME = _script(
    "recall_time",
    r"""
local lo, hi, limit = ARGV[3], ARGV[4], tonumber(ARGV[5])
local f = parse_filter(6)
local function newer(x, y)
  local c = tcmp(x.s, y.s)
  if c ~= 0 then return c > 0 end
  return idless(x.id, y.id)
end
local h = heap_new(limit, newer)
local taken = {}
-- Keep record id when in scope and said in the range (by_said) or naming a time in it.
local function consider(id, by_said)
  if taken[id] then return false end
  local r = redis.call('HMGET', rkey(id), 'sc', 's', 'ts', 'te')
  if not r[1] or not scope_ok(f, r[1]) then return false end
  local hit
  if by_said then
    hit = tcmp(r[2], lo) >= 0 and tcmp(r[2], hi) < 0
  elseif r[3] == '' then
    hit = false
  elseif r[4] == '' then
    hit = tcmp(r[3], lo) >= 0 and tcmp(r[3], hi) < 0
  else
    hit = tcmp(r[3], hi) < 0 and tcmp(r[4], lo) > 0
  end
  if not hit then return false end
  taken[id] = true
  heap_push(h, {id = id, s = r[2]})
  return true
end
local low = tonumber(lo)
for _, key in ipairs(routes(f)) do
  local rank = redis.call('ZCOUNT', key, '(' .. hi, '+inf')
  local kept, cut, done = 0, nil, false
  while not done do
    local page = redis.call('ZREVRANGE', key, rank, rank + PAGE - 1, 'WITHSCORES')
    if #page == 0 then break end
    for i = 1, #page, 2 do
      local sc = tonumber(page[i + 1])
      if sc < low or (cut and sc < cut) then done = true; break end
      if consider(page[i], true) then
        kept = kept + 1
        if kept == limit then cut = sc end
      end
    end
    rank = rank + PAGE
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', ZMOMENTS, lo, hi)) do consider(id, false) end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', ZSPANS, lo, '+inf')) do consider(id, false) end
local out = {}
for _, x in ipairs(heap_sorted(h)) do
  local r = redis.call('HMGET', rkey(x.id), 'b', 'tm')
  out[#out + 1] = r[1]
  out[#out + 1] = r[2]
end
return out
""",
)

# KEYS: stats. ARGV: P, TTL, the filter (5 values), whether it lets every record through ('1').
# Answers how many records are in scope.
COUNT = _script(
    "recall_count",
    r"""
local f = parse_filter(3)
if ARGV[8] == '1' then return tonumber(redis.call('HGET', STATS, 'n') or '0') end
local count = 0
for _, key in ipairs(routes(f)) do
  local rank = 0
  while true do
    local page = redis.call('ZRANGE', key, rank, rank + PAGE - 1)
    if #page == 0 then break end
    for _, id in ipairs(page) do
      local sid = redis.call('HGET', rkey(id), 'sc')
      if sid and scope_ok(f, sid) then count = count + 1 end
    end
    rank = rank + PAGE
  end
end
return count
""",
)

__all__ = ["COUNT", "DELETE", "DELETE_SCOPE", "GET", "KEYWORD", "PUT", "STATS_OF", "TIME"]
