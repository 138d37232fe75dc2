"""Reads for the views (one module per area): store snapshots and bounded live mqcore calls."""
