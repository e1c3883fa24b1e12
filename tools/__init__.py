"""Maintenance scripts of the repository (not part of the calculator or the dashboard)."""
