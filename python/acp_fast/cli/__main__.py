"""``python -m acp_fast.cli``: the same as the ``acp-fast`` command."""

import sys

from . import main

sys.exit(main())
