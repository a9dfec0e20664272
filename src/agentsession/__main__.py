"""``python -m agentsession`` runs the command line."""

from .cli.app import main

main()
