"""The trainer's progress line in the local CLI (progress_line.py)."""

import io
import logging

from absl import logging as absl_logging

from pipelines.local import progress_line
from tpu_embeddings.training import training_loop
from tpu_embeddings.training.config import LoopConfig


def _log(step, loss=2.5):
  fields = training_loop.progress(step, LoopConfig(), loss, 150_000.0, 400,
                                  0.5)
  training_loop._log_progress(fields)


def test_fields_give_the_epoch_and_the_time_left_of_planned_passes():
  fields = training_loop.progress(250, LoopConfig(epochs=5), 2.5, 1e5, 400,
                                  0.5)
  assert (fields['epoch'], fields['epochs']) == (4, 5)  # 80 steps a pass
  assert fields['total_steps'] == 400
  assert fields['eta_seconds'] == 75.0
  fixed = training_loop.progress(10, LoopConfig(train_steps=40), 2.5, 1e5, 40,
                                 0.5)
  assert fixed['epoch'] is None and fixed['eta_seconds'] == 15.0
  assert progress_line.format_progress(fields) == (
      'step 250/400  epoch 4/5  loss 2.5000  100,000 examples/s  ETA 1:15')


def test_a_terminal_gets_one_updating_line_ended_before_other_output():
  out = io.StringIO()
  with progress_line.ProgressLine(out, terminal=True) as line:
    _log(100)
    _log(200, loss=2.25)
    absl_logging.info('not a progress record')
    line.end_line()
    out.write('  EmbeddingTrainer done\n')
  text = out.getvalue()
  assert text.count('\r\x1b[K') == 2
  assert text.endswith('loss 2.2500  150,000 examples/s  ETA 1:40\n'
                       '  EmbeddingTrainer done\n')
  assert 'not a progress record' not in text


def test_elsewhere_each_progress_record_is_a_plain_line():
  out = io.StringIO()
  logger = logging.getLogger('absl')
  level = logger.level
  logger.setLevel(logging.WARNING)  # shown even when absl INFO is off
  try:
    with progress_line.ProgressLine(out, terminal=False):
      _log(100)
      _log(400)
    assert logger.level == logging.WARNING
  finally:
    logger.setLevel(level)
  lines = out.getvalue().splitlines()
  assert lines == ['    step 100/400  epoch 2/5  loss 2.5000  150,000 '
                   'examples/s  ETA 2:30',
                   '    step 400/400  epoch 5/5  loss 2.5000  150,000 '
                   'examples/s  ETA 0:00']
