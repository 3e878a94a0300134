"""`python -m recovery_proxy`: the `recovery-proxy` command."""

import sys

from recovery_proxy.cli import main

sys.exit(main())
