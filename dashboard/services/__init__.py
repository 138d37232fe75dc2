"""Writes for the views: permission check, audit row, mqcore call, outcome (one module per area)."""
