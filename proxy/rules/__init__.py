"""The compiled rules: model, schema, loading from YAML, overlays, hot reload."""
