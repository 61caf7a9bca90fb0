"""Where the repository is, for tests that start `python -m ...` in it."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
