"""``python -m jaxrl_fdg`` is the ``jaxrl-fdg`` command."""

import sys

from jaxrl_fdg.cli import main

if __name__ == "__main__":  # importing the module (a docs or API tool does) runs nothing
    sys.exit(main())
