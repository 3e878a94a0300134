"""The A/B experiment: which arm a session is in, and the report's arithmetic."""
