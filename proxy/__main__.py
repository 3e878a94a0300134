"""`python -m recovery_proxy`: the `recovery-proxy` command."""

import sys

from recovery_proxy.cli.main import main

sys.exit(main())
