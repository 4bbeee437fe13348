"""``python -m metaharness.shell`` runs the same CLI as the ``metaharness`` console script."""

from metaharness.shell.entry import main

main()
