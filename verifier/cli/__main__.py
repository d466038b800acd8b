"""``python -m verifier.cli``: the `verifier` command."""
import sys

from verifier.cli import main

sys.exit(main())
