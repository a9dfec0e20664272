"""``python -m agentsession`` runs the command line."""

from .cli import main

main()
