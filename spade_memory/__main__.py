from spade_memory.server.entry import run

run()
