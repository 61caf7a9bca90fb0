"""Fixtures of the Kubeflow client tests: a KFP context of their own and a
compiled package to submit."""

import pytest

from tests.support import fake_kfp


@pytest.fixture(autouse=True)
def _isolated_kfp_context(tmp_path, monkeypatch):
  fake_kfp.isolate_kfp_context(tmp_path, monkeypatch)


@pytest.fixture
def package(tmp_path):
  return fake_kfp.write_package(tmp_path)
