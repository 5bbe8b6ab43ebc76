"""``python -m jaxrl_fdg`` is the ``jaxrl-fdg`` command."""

import sys

from jaxrl_fdg.cli import main

sys.exit(main())
