import sys

from spade_memory.server.cli import main

sys.exit(main())
