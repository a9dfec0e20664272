"""The web UI page (filled in below)."""

PAGE = "<!doctype html><title>agentsession</title>"
