"""The ``agentsession`` command line: everything only the command line uses."""
