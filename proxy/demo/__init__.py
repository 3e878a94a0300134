"""The offline demo: a scripted scenario, one play per wire format, the mock model."""
