"""The HTTP side: the ASGI app, upstreams, control plane, admin API, inspector."""
