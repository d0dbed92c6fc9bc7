"""Placements: OCM's scheduler simulated offline, and its explanation."""
