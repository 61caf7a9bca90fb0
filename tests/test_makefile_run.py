"""`make run` starts the CLI as the CLI would restart itself."""

import os
import subprocess

from tests.support import paths
from tpu_embeddings.core import huge_pages


def test_run_sets_the_huge_pages_tunable_the_cli_asks_for(tmp_path):
  """With the Makefile's environment the CLI's entry has nothing to change
  (`huge_pages.environ`), so it does not restart its interpreter."""
  probe = tmp_path / 'probe.mk'
  probe.write_text(f'include {paths.REPO}/Makefile\n'
                   'run: probe\n'
                   'probe:\n'
                   '\t@echo "$$GLIBC_TUNABLES"\n'
                   '\t@exit 3\n')
  env = {k: v for k, v in os.environ.items() if k != 'GLIBC_TUNABLES'}
  # -o: run's other prerequisites (the venv, the compiled sources) are left
  # as they are.
  done = subprocess.run(['make', '-s', '-o', '.venv/.installed-lock',
                         '-o', 'build/.compiled-sources', '-f', str(probe),
                         'run'],
                        capture_output=True, text=True, env=env,
                        cwd=paths.REPO, timeout=60)
  tunables = done.stdout.splitlines()[0]
  assert huge_pages.environ({'GLIBC_TUNABLES': tunables}) == {
      'GLIBC_TUNABLES': tunables}
  assert huge_pages.TUNABLE in tunables.split(':')
