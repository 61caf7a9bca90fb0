"""The ModelBlessing the validator writes (the conventions of TFX's Evaluator).

Custom properties `blessed` (1/0), `current_model` (URI) and
`current_model_id` (MLMD artifact id) of the trainer's `Model` that was
validated, as the stock Evaluator sets them for its `model` input (so that
`LatestBlessedModelStrategy` over the trainer's Model channel finds the last
blessed one, and stock Pusher accepts the blessing), `baseline_model` ('' when
none) and `blessing_message`. Report files first, then an empty `BLESSED` or
`NOT_BLESSED` file, so a blessing without its marker is incomplete.
"""

import os
from typing import Optional

import tensorflow as tf
from tfx import types

from components import keys
from components.validator import report as report_lib
from tpu_embeddings.validation.validate import Validation

BLESSED_FILE = 'BLESSED'
NOT_BLESSED_FILE = 'NOT_BLESSED'


def write(blessing: types.Artifact, validation: Validation,
          model_id: Optional[int] = None):
  """Report files, then the marker, then the properties; no partial files.

  `model_id`: the validated Model artifact's id (set when it has one).
  """
  uri, report = blessing.uri, validation.report
  written = []
  try:
    written += report_lib.write(uri, report, validation.candidate_norms,
                                validation.baseline_norms,
                                validation.norms_table)
    marker = os.path.join(uri, BLESSED_FILE if report['blessed'] else
                          NOT_BLESSED_FILE)
    with tf.io.gfile.GFile(marker, 'w') as f:
      f.write('')
  except Exception:
    for path in written:
      if tf.io.gfile.exists(path):
        tf.io.gfile.remove(path)
    raise
  blessing.set_int_custom_property(keys.BLESSED,
                                   1 if report['blessed'] else 0)
  blessing.set_string_custom_property(keys.CURRENT_MODEL,
                                      report['current_model'])
  if model_id:
    blessing.set_int_custom_property(keys.CURRENT_MODEL_ID, int(model_id))
  blessing.set_string_custom_property(keys.BASELINE_MODEL,
                                      report['baseline_model'])
  blessing.set_string_custom_property(keys.BLESSING_MESSAGE, report['summary'])
