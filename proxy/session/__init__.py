"""Session keys: tenant hash and named ids, /s/{id}/ paths, header-less continuity."""
