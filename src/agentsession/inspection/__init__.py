"""Inspection: requests rebuilt and diagnosed, the inspection views, annotation, the HTML report."""
