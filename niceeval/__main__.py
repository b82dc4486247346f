"""`python -m niceeval`: the same as the `niceeval` command."""

import sys

from niceeval.cli import main

sys.exit(main())
