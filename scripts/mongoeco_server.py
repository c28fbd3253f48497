"""Runs the mongoeco MongoDB wire-protocol emulator on loopback (started by services.sh)."""

import asyncio
import signal
import sys

from mongoeco.engines.memory import MemoryEngine
from mongoeco.wire import AsyncMongoEcoProxyServer


async def main() -> None:
    server = AsyncMongoEcoProxyServer(engine=MemoryEngine(), host="127.0.0.1", port=int(sys.argv[1]))
    await server.start()
    print("listening", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    await server.close()


asyncio.run(main())
