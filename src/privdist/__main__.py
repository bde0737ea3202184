"""``python -m privdist``: the same as the ``privdist`` command."""

import sys

from .cli.main import main

sys.exit(main())
