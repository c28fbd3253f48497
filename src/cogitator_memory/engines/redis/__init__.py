"""The Redis engine (standalone and cluster): threads (:mod:`.threads`) over the Lua scripts of
:mod:`.scripts`."""
