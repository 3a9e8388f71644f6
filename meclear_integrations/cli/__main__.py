"""``python -m meclear_integrations.cli``: the ``meclear`` command."""

import sys

from . import main

sys.exit(main())
