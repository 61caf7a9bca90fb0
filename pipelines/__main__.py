import os
import sys
import warnings

from tpu_embeddings.core import huge_pages
from pipelines.cli import stderr_filter

# Before anything is imported: a multi-GB table restored or exported in this
# process then faults huge pages, not 4 KiB ones.
huge_pages.reexec_if_needed(['-m', 'pipelines'] + sys.argv[1:])

# Quiet TensorFlow's C++ start-up chatter and library deprecation notices;
# `run --verbose` still shows TFX's own logs.
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
for category in (DeprecationWarning, FutureWarning, UserWarning):
  warnings.filterwarnings('ignore', category=category)
# ...and the three ERROR lines XLA logs at `import tensorflow` on every
# machine (real errors still show: TF_CPP_MIN_LOG_LEVEL stays at 2).
stderr_filter.install()

from pipelines.cli.main import main  # pylint: disable=g-import-not-at-top

sys.exit(main())
