"""A fresh virtualenv with the newest TensorFlow, tf-keras and tensorflow-hub.

Consumers load what the pipeline pushed on newer TensorFlow than the pinned
pipeline runs. `create(env_dir, newest_versions())` builds a virtualenv of
the interpreter the tests run on (Python 3.10) holding the newest releases
of those three in the package registry. The wheels are cached by uv (or pip)
between runs, so after the first run a new environment takes seconds; each
test session builds its own, so nothing of an earlier run leaks in.

`newest_versions()` raises `RegistryUnreachable` when the registry does not
answer; the tests skip with that reason. Any other failure is an error.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

PACKAGES = ('tensorflow', 'tf-keras', 'tensorflow-hub')
# tensorflow-hub imports pkg_resources, which setuptools 81 removed; a
# consumer installs it beside tensorflow-hub (docs/consuming.md).
EXTRAS = ('setuptools<81',)
_TIMEOUT = 1800


class RegistryUnreachable(RuntimeError):
  """The package registry did not answer."""


def _uv() -> Optional[str]:
  """The uv next to this interpreter (the project's venv has one)."""
  found = os.path.join(os.path.dirname(sys.executable), 'uv')
  return found if os.access(found, os.X_OK) else shutil.which('uv')


def _base_python() -> str:
  """The interpreter this venv was made from."""
  return os.path.realpath(getattr(sys, '_base_executable', '') or
                          sys.executable)


def newest_versions() -> Dict[str, str]:
  """{package: newest version in the registry}."""
  found = {}
  for package in PACKAGES:
    try:
      done = subprocess.run(
          [sys.executable, '-m', 'pip', 'index', 'versions', package,
           '--disable-pip-version-check'],
          capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
      raise RegistryUnreachable(
          f'pip index versions {package}: no answer in 120 s') from e
    match = re.match(rf'{re.escape(package)} \(([^)]+)\)', done.stdout)
    if done.returncode or not match:
      last = (done.stderr or done.stdout).strip().splitlines()[-1:]
      raise RegistryUnreachable(f'pip index versions {package}: {last}')
    found[package] = match.group(1)
  return found


def _run(command: List[str], what: str):
  done = subprocess.run(command, capture_output=True, text=True,
                        timeout=_TIMEOUT)
  if done.returncode:
    raise RuntimeError(f'{what} failed: {done.stderr[-3000:]}')


def create(env_dir: str, versions: Dict[str, str]) -> str:
  """A new virtualenv at `env_dir` with `versions`; returns its python."""
  python = os.path.join(env_dir, 'bin', 'python')
  pins = [f'{p}=={versions[p]}' for p in PACKAGES] + list(EXTRAS)
  uv = _uv()
  if uv:
    # --seed: pip in the venv, for installing the checkout as users do.
    _run([uv, 'venv', '-q', '--seed', '--python', _base_python(), env_dir],
         'uv venv')
    _run([uv, 'pip', 'install', '-q', '--python', python] + pins,
         f'installing {" ".join(pins)}')
  else:
    _run([_base_python(), '-m', 'venv', env_dir], 'python -m venv')
    _run([python, '-m', 'pip', 'install', '-q'] + pins,
         f'installing {" ".join(pins)}')
  return python


def install_checkout(python: str, repo: str, workdir: str) -> str:
  """`pip install` of the repository's files (those git tracks or does not
  ignore), copied to `workdir`
  (a build writes build/ and *.egg-info beside its sources); returns the
  copy's path."""
  files = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others',
                          '--exclude-standard'], cwd=repo, check=True,
                         capture_output=True).stdout.decode().split('\0')
  source = os.path.join(workdir, 'checkout')
  for rel in filter(None, files):
    if not os.path.exists(os.path.join(repo, rel)):
      continue  # deleted in the work tree, not yet committed
    os.makedirs(os.path.join(source, os.path.dirname(rel)), exist_ok=True)
    shutil.copy2(os.path.join(repo, rel), os.path.join(source, rel))
  _run([python, '-m', 'pip', 'install', '-q', '--disable-pip-version-check',
        source], 'pip install of the checkout')
  return source


def versions_of(python: str) -> Dict[str, str]:
  """{package: installed version} in the environment of `python`."""
  code = ('import importlib.metadata as m, json; print(json.dumps('
          f'{{p: m.version(p) for p in {list(PACKAGES)!r}}}))')
  done = subprocess.run([python, '-c', code], capture_output=True, text=True,
                        check=True, timeout=120)
  return json.loads(done.stdout)


def clean_env() -> Dict[str, str]:
  """This process's environment without what points into the repository."""
  env = {k: v for k, v in os.environ.items()
         if k not in ('PYTHONPATH', 'VIRTUAL_ENV', 'PYTHONHOME')}
  env['TF_CPP_MIN_LOG_LEVEL'] = '2'
  return env
