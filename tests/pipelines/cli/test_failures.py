"""pipelines/cli/failures.py: the exit code and the one line of each failure,
from the exceptions the libraries really raise."""

import errno
import os
import signal
import subprocess
import sys
import textwrap
import types

import pytest
import tensorflow as tf

from pipelines import stop_signals
from pipelines.cli import failures
from pipelines.local import failure
from tests.support import paths
from tpu_embeddings.models import model_module
from tpu_embeddings.push_root import integrity


def _raised(fn):
  try:
    fn()
  except BaseException as e:
    return e
  raise AssertionError('nothing raised')


def _full_disk():
  raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), '/data/ckpt-3.data')


def test_a_full_disk_inside_a_component(tmp_path):
  cause = _raised(_full_disk)
  code, line = failures.describe(failure.RunFailed(
      'EmbeddingTrainer', cause, 'kept the outputs of Vocabulary'))
  assert code == failures.EXIT_MACHINE == 3
  assert line == ('EmbeddingTrainer failed: no space left on device '
                  '(/data/ckpt-3.data): free space there and run the same '
                  'command again; kept the outputs of Vocabulary')


def _write_tf(path):
  with tf.io.gfile.GFile(path, 'w') as f:
    f.write('x' * 100_000)


def test_tensorflow_and_sqlite_words_for_machine_failures():
  # /dev/full fails every write with ENOSPC; TensorFlow says so in words.
  error = _raised(lambda: _write_tf('/dev/full'))
  assert isinstance(error, tf.errors.ResourceExhaustedError)
  assert failures.describe(error) == (
      3, 'no space left on device (/dev/full; No space left on device): free '
      'space there and run the same command again')
  error = _raised(lambda: tf.io.gfile.makedirs('/sys/not-here'))
  assert failures.describe(error)[0] == failures.EXIT_MACHINE
  sqlite = RuntimeError('Error when executing query: attempt to write a '
                        'readonly database query: INSERT INTO ...')
  assert failures.describe(sqlite) == (
      3, 'read-only file system (ML Metadata: attempt to write a readonly '
      'database): make it writable and run the same command again')
  beam = ValueError("bad line [while running 'WriteSplits']\nTraceback ...")
  assert failures.describe(beam) == (2, 'bad line')


# ML Metadata's words when SQLite cannot write: the protobuf it was writing,
# SQLite's message and the SQL statement.
_STORE_FULL = (
    'Cannot create node for type_id: 24 last_known_state: RUNNING '
    'custom_properties { key: "config" value { string_value: "{}" } } name: '
    '"601efd77"Error when executing query: database or disk is full query:  '
    'INSERT INTO `Execution`(    `type_id`, `last_known_state`) VALUES (24, '
    '2);')


def test_a_full_metadata_store_is_named_not_quoted(tmp_path):
  """The line names the store's file to free space for, not the SQL."""
  home = str(tmp_path / 'home')
  store = os.path.join(home, 'metadata.sqlite')
  during = failure.wrap(RuntimeError(_STORE_FULL), home, 'EmbeddingExporter',
                        ['Vocabulary'])
  code, line = failures.describe(during)
  assert code == failures.EXIT_MACHINE
  assert line.startswith(f'EmbeddingExporter failed: no space left on device '
                         f'({store}): free space there and run the same '
                         'command again; kept the outputs of Vocabulary'), line
  # Before any component runs (the store paired with the home).
  code, line = failures.describe(failure.wrap(
      RuntimeError(_STORE_FULL.replace('database or disk is full',
                                       'attempt to write a readonly '
                                       'database')), home, None, []))
  assert (code, line) == (3, f'read-only file system ({store}): make it '
                          'writable and run the same command again')
  # Without the home (another caller): SQLite's message alone.
  assert failures.describe(RuntimeError(_STORE_FULL)) == (
      3, 'no space left on device (ML Metadata: database or disk is full): '
      'free space there and run the same command again')


def test_codes_by_kind_of_failure():
  damaged = integrity.DamagedVersionError('pushed version 2 ... is damaged')
  assert failures.describe(damaged)[0] == failures.EXIT_DAMAGED == 1
  assert failures.describe(ValueError('--k must be >= 1')) == (
      2, '--k must be >= 1')
  assert failures.describe(FileNotFoundError('no such home'))[0] == 2
  code, line = failures.describe(failure.RunFailed(
      'EmbeddingExporter', KeyError('x'), ''))
  assert code == failures.EXIT_FAILED == 4
  assert line == "EmbeddingExporter failed: KeyError: 'x'"
  long = failures.first_line(ValueError('x' * 1000))
  assert len(long) == 400 and long.endswith('...')


def _user_code(error: BaseException):
  """What ModelModule raises for `error` raised inside a module's
  `signatures`."""
  module = model_module.ModelModule(types.SimpleNamespace(
      embedding_spec=lambda ctx: None, loss_fn=lambda *a: None,
      signatures=lambda *a: (_ for _ in ()).throw(error),
      FEATURES={'item': 'item'}), path='/home/me/my_model.py')
  return _raised(lambda: module.signatures(None, None, None))


def test_the_module_files_own_code_failing_is_its_own_code():
  code, line = failures.describe(failure.RunFailed(
      'CheckpointValidator', _user_code(ValueError('boom')),
      'kept the outputs of EmbeddingTrainer'))
  assert code == failures.EXIT_USER_CODE == 5
  assert line == ('CheckpointValidator failed: module file '
                  '/home/me/my_model.py: signatures raised ValueError: boom '
                  '(model was None: the module defines no model_fn); kept '
                  'the outputs of EmbeddingTrainer')
  # ... unless it was the machine: that stays a machine failure.
  full = _user_code(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), '/x'))
  assert failures.describe(full)[0] == failures.EXIT_MACHINE
  # A module file refused at load is a bad input.
  refused = model_module.ModelModuleError('module file x.py: loss_fn: is '
                                          'missing')
  assert failures.describe(refused)[0] == failures.EXIT_INPUT


def test_stop_signals_unwind_as_keyboard_interrupt():
  stopped = stop_signals.Stopped(signal.SIGTERM)
  assert isinstance(stopped, KeyboardInterrupt)
  assert stop_signals.signal_of(stopped) == signal.SIGTERM
  assert stop_signals.signal_of(KeyboardInterrupt()) == signal.SIGINT
  assert stop_signals.exit_code(signal.SIGTERM) == 143
  assert stop_signals.signal_of(ValueError()) is None


def test_a_stop_swallowed_by_a_finalizer_is_still_the_stop(monkeypatch):
  monkeypatch.setattr(stop_signals, '_RECEIVED', [])
  handlers = {s: signal.getsignal(s) for s in stop_signals.HANDLED}
  try:
    try:  # as a __del__ running when the signal arrived swallows it
      stop_signals._raise_stopped(signal.SIGINT, None)
    except stop_signals.Stopped:
      pass
    assert stop_signals.signal_of(ValueError('raised later')) == signal.SIGINT
  finally:
    for s, handler in handlers.items():
      signal.signal(s, handler)


_FINALIZER_STOP = textwrap.dedent("""
    import os, signal, time
    from pipelines import stop_signals
    stop_signals.install()

    class Server:
      def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)  # the signal lands inside the finalizer

    Server()
    try:
      for _ in range(100):
        time.sleep(0.05)
      print('ran on')
    except stop_signals.Stopped as stop:
      print('stopped', stop.signum)
    """)


def test_a_stop_inside_a_finalizer_stops_the_run_quietly():
  """Python swallows an exception raised in `__del__` and prints it; the
  stop is raised again in the main thread, and nothing is printed."""
  done = subprocess.run([sys.executable, '-c', _FINALIZER_STOP],
                        capture_output=True, text=True, timeout=60,
                        cwd=paths.REPO)
  assert done.stdout == f'stopped {int(signal.SIGTERM)}\n', done
  assert done.stderr == '', done.stderr


def test_an_error_raised_while_a_stop_unwinds_is_the_stop():
  # A stop raised inside a C callback can surface as a SystemError.
  try:
    try:
      raise stop_signals.Stopped(signal.SIGTERM)
    except KeyboardInterrupt:
      raise SystemError('bad argument to internal function')  # noqa: B904
  except SystemError as e:
    assert stop_signals.signal_of(e) == signal.SIGTERM
  cause = ValueError('x')
  cause.__cause__ = ValueError('y')
  assert stop_signals.signal_of(cause) is None


@pytest.mark.slow
@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_is_one_line_and_its_exit_code(tmp_path, signum):
  """Sent once `run` has started (while it imports TFX or runs): the CLI
  unwinds, prints one line and exits 128 + the signal number."""
  data = tmp_path / 'data' / 'span-1'
  data.mkdir(parents=True)
  (data / 'a.txt').write_text('a b c\n' * 100)
  process = subprocess.Popen(
      [sys.executable, '-m', 'pipelines', 'run', '--data',
       str(tmp_path / 'data'), '--home', str(tmp_path / 'home')],
      cwd=paths.REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      text=True)
  assert process.stdout.readline().startswith('running pipeline')
  process.send_signal(signum)
  _, err = process.communicate(timeout=120)
  assert process.returncode == 128 + signum, err
  assert len(err.splitlines()) == 1, err
  assert err.startswith(f'stopped by {signal.Signals(signum).name}'), err
