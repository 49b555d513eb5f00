"""``python -m metalbench.builtins [--check]``: rewrite (or check) what derives from the registry."""
import sys

from .derive import main

sys.exit(main())
