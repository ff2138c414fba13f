#!/usr/bin/python3 -S
"""Entry point of the stand-ins inside a node (the node's /usr/bin/python3, stdlib only): every tool in the node's
/usr/local/bin links here and argv[0] picks it; `__main__.py refresh-loop` is the state syncer's unit. `-S`: no
site-packages to look through (a third of a stand-in's start-up; a real tool starts in a millisecond).
Also runs as `python -m gb10check.sim.standins TOOL ARGS`."""

import os
import sys

if __package__ in (None, ""):  # run as a file (through a tool's link): import the package from beside it
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and os.path.realpath(sys.path[0] or ".") == here:
        del sys.path[0]  # not the package's own folder: its modules are not top-level names
    sys.path.insert(0, os.path.dirname(here))
    from standins.tools import main
else:
    from .tools import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
