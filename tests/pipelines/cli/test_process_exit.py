"""The CLI's process ends with its exit handlers run and its output flushed,
without the interpreter's teardown."""

import subprocess
import sys

from tests.support import paths


def _run(code: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, '-c', code], capture_output=True,
                        text=True, timeout=60, cwd=paths.REPO)


def test_ends_with_the_code_after_the_exit_handlers_and_a_flush():
  done = _run('import atexit, sys\n'
              'from pipelines.cli import process_exit\n'
              'atexit.register(lambda: print("handler ran"))\n'
              'print("buffered", end="")\n'
              'sys.stderr.write("on stderr")\n'
              'class Teardown:\n'
              '  def __del__(self): print("torn down")\n'
              'kept = Teardown()\n'
              'process_exit.end(3)\n'
              'print("not reached")\n')
  assert done.returncode == 3
  assert done.stdout == 'bufferedhandler ran\n'
  assert done.stderr == 'on stderr'


def test_leaves_the_exit_to_the_interpreter_while_a_thread_runs():
  done = _run('import sys, threading, time\n'
              'from pipelines.cli import process_exit\n'
              'worker = threading.Thread(\n'
              '    target=lambda: (time.sleep(0.5), print("thread done")))\n'
              'worker.start()\n'
              'code = process_exit.end(4)\n'
              'print("returned", code)\n'
              'sys.exit(code)\n')
  assert done.returncode == 4
  assert done.stdout == 'returned 4\nthread done\n'


def test_a_closed_stdout_does_not_change_the_code():
  done = _run('import os, sys\n'
              'from pipelines.cli import process_exit\n'
              'print("lost", end="")\n'
              'os.close(1)\n'
              'process_exit.end(5)\n')
  assert done.returncode == 5
  assert done.stderr == ''
