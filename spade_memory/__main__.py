import sys

from spade_memory.server.entry import main

sys.exit(main())
