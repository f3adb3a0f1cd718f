"""Allow `python -m rlforge`."""

from rlforge.cli import main

main()
