"""``python -m lcm_lab``: the same command line as ``lcm-lab``."""

import sys

from lcm_lab.io import interrupts

if __name__ == "__main__":
    with interrupts.handled(whole_process=True):  # before the CLI's modules load: a signal there is one line too
        try:
            from lcm_lab.cli import main
        except KeyboardInterrupt as exc:
            sys.exit(interrupts.report("lcm-lab", exc))
        sys.exit(main())
