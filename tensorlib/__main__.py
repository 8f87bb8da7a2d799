"""``python -m tensorlib``: the command line of :mod:`tensorlib.command_line.main`."""

import sys

from tensorlib.command_line.main import main

if __name__ == "__main__":
    sys.exit(main())
