"""Capacity-planning and packing-policy reports as PySpark jobs."""
