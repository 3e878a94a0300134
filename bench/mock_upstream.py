"""A fast mock chat endpoint in its own process: `python -m bench.mock_upstream PORT`."""

from __future__ import annotations

import sys

import uvicorn

from proxy.mock_model import create_mock_app

if __name__ == "__main__":
    uvicorn.run(
        create_mock_app(),
        host="127.0.0.1",
        port=int(sys.argv[1]),
        log_level="warning",
        access_log=False,
    )
