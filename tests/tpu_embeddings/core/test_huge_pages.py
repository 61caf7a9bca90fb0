"""Tests for tpu_embeddings/core/huge_pages.py."""

import os
import subprocess
import sys

from tests.support import paths
from tpu_embeddings.core import huge_pages

ROOT = paths.REPO


def test_environ_adds_the_tunable_and_keeps_the_users():
  assert huge_pages.environ({})['GLIBC_TUNABLES'] == huge_pages.TUNABLE
  assert huge_pages.environ({'GLIBC_TUNABLES': 'glibc.malloc.arena_max=2'})[
      'GLIBC_TUNABLES'] == f'glibc.malloc.arena_max=2:{huge_pages.TUNABLE}'
  assert huge_pages.environ({'GLIBC_TUNABLES': 'glibc.malloc.hugetlb=0'})[
      'GLIBC_TUNABLES'] == 'glibc.malloc.hugetlb=0'
  env = {'PATH': '/bin'}
  huge_pages.environ(env)
  assert env == {'PATH': '/bin'}


def test_reexec_restarts_once_with_the_tunable(tmp_path):
  script = tmp_path / 'show.py'
  script.write_text(
      'import os, sys\n'
      'from tpu_embeddings.core import huge_pages\n'
      'print(os.environ.get("GLIBC_TUNABLES"), sys.argv[1:], flush=True)\n'
      'huge_pages.reexec_if_needed(sys.argv)\n')
  env = dict(os.environ, PYTHONPATH=ROOT)
  env.pop('GLIBC_TUNABLES', None)
  out = subprocess.run([sys.executable, str(script), 'x'], env=env,
                       check=True, capture_output=True,
                       text=True).stdout.splitlines()
  # First run without it, the restarted one with it and the same arguments,
  # and no third run.
  assert out == ["None ['x']", f"{huge_pages.TUNABLE} ['x']"]
