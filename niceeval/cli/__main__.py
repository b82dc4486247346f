"""`python -m niceeval.cli`: the same as the `niceeval` command."""

import sys

from niceeval.cli._main import main

sys.exit(main())
