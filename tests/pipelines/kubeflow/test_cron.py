"""Kubeflow Pipelines cron expressions."""

import pytest

from pipelines.kubeflow import cron as cron_lib


@pytest.mark.parametrize('cron', ['0 0 3 * * *', '*/15 * * * * *',
                                  '0 0 0 1,15 JAN-JUN ?', '@daily',
                                  '@every 6h'])
def test_valid_crons_pass(cron):
  assert cron_lib.validate_cron(cron) == cron
