"""``python -m prefixscan``: the command line of :mod:`prefixscan.cli`."""

from .cli import main

raise SystemExit(main())
