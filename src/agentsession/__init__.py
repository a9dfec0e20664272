"""agentsession."""
