import os
import sys
import warnings

# Quiet TensorFlow's C++ start-up chatter and library deprecation notices;
# `run --verbose` still shows TFX's own logs.
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
for category in (DeprecationWarning, FutureWarning, UserWarning):
  warnings.filterwarnings('ignore', category=category)

from pipelines.cli import main  # pylint: disable=g-import-not-at-top

sys.exit(main())
