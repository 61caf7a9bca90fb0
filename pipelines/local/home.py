"""The local runner's home: one folder holds a pipeline's whole state.

    <home>/metadata.sqlite   ML Metadata
    <home>/pipeline/         pipeline root (artifacts)
    <home>/pushed/           push root (serving/<v>/, hub/<v>/)
    <home>/home.json         the model and settings runs reuse

Plain paths, no TFX: consumer commands given `--home` read the push root
with nothing but TensorFlow installed.
"""

import os
from typing import Dict

METADATA_FILENAME = 'metadata.sqlite'
PIPELINE_DIRNAME = 'pipeline'
PUSHED_DIRNAME = 'pushed'
RECORD_FILENAME = 'home.json'


def metadata_path(home: str) -> str:
  return os.path.join(os.path.abspath(home), METADATA_FILENAME)


def push_root(home: str) -> str:
  return os.path.join(os.path.abspath(home), PUSHED_DIRNAME)


def paths(home: str) -> Dict[str, str]:
  home = os.path.abspath(home)
  return {
      'home': home,
      'metadata': metadata_path(home),
      'pipeline_root': os.path.join(home, PIPELINE_DIRNAME),
      'push_root': push_root(home),
  }


def record_path(home: str) -> str:
  """What the home remembers of its runs (home_record.py)."""
  return os.path.join(os.path.abspath(home), RECORD_FILENAME)
