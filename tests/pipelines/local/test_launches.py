"""pipelines/local/launches.py around real LocalDagRunner launches."""

import io
import os

import pytest
from tfx.orchestration import metadata
from tfx.orchestration import pipeline as tfx_pipeline
from tfx.orchestration.local.local_dag_runner import LocalDagRunner

from components.corpus_example_gen.component import corpus_example_gen
from pipelines.local import launches


def _pipeline(tmp_path):
  data = tmp_path / 'data' / 'span-1'
  data.mkdir(parents=True)
  (data / 'a.txt').write_text('alpha beta gamma\n' * 20)
  return tfx_pipeline.Pipeline(
      pipeline_name='launches', pipeline_root=str(tmp_path / 'root'),
      components=[corpus_example_gen(str(tmp_path / 'data'))],
      metadata_connection_config=metadata.sqlite_metadata_connection_config(
          str(tmp_path / 'metadata.sqlite')))


@pytest.mark.slow
def test_an_output_folder_with_files_is_neither_written_nor_deleted(
    tmp_path):
  """What TFX would do with a store that restarted its execution ids: write
  into the folder of execution 1 and, on failure, delete it."""
  folder = tmp_path / 'root' / 'FileBasedExampleGen' / 'examples' / '1'
  folder.mkdir(parents=True)
  (folder / 'pushed-model-file').write_text('keep me')
  out = io.StringIO()
  with pytest.raises(launches.ReusedOutputError,
                     match=f'output folder {folder} already holds files'):
    with launches.Launches(out) as progress:
      LocalDagRunner().run(_pipeline(tmp_path))
  assert os.listdir(folder) == ['pushed-model-file']
  assert progress.current == 'FileBasedExampleGen' and progress.done == []
  assert 'FileBasedExampleGen    FAILED after' in out.getvalue()


@pytest.mark.slow
def test_progress_lines_and_timings(tmp_path):
  out = io.StringIO()
  with launches.Launches(out) as progress:
    LocalDagRunner().run(_pipeline(tmp_path))
  lines = out.getvalue().splitlines()
  assert lines[0] == '  FileBasedExampleGen    running ...'
  assert lines[1].startswith('  FileBasedExampleGen    done in ')
  assert progress.done == ['FileBasedExampleGen'] and progress.current is None
  assert set(progress.timings) == {'FileBasedExampleGen'}
