"""``python -m mailnode.cli``: the same command line as the ``mailnode`` script."""

from mailnode.cli import main

main()
