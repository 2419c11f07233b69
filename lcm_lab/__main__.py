"""``python -m lcm_lab``: the same command line as ``lcm-lab``."""

import sys

from lcm_lab.cli import main

if __name__ == "__main__":
    sys.exit(main())
