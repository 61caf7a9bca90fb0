"""`python -m pipelines COMMAND ...` (the same as `tpu-embeddings COMMAND ...`).
"""

import sys

from pipelines.cli import entry

sys.exit(entry.main())
