"""A run's failure as the user should read it: CsvExampleGen's as the row
it stopped on (csv_rows), every other as failure.wrap gives it."""

from typing import Optional

from pipelines import csv_rows
from pipelines import pipeline as pipeline_lib
from pipelines import stock_example_gen
from pipelines.local import failure
from pipelines.local import launches
from pipelines.local import retrain


def explain(error: BaseException, data_root: str,
            config: pipeline_lib.PipelineConfig, home: str,
            progress: launches.Launches) -> BaseException:
  """What to raise for `error` (failure.wrap); CsvExampleGen's failure as
  the row it stopped on, when one is at fault."""
  if progress.current == stock_example_gen.NODE_ID and isinstance(
      error, Exception):
    bad_row = bad_csv_row(data_root, config.example_gen)
    if bad_row:
      error = ValueError(bad_row)
  return failure.wrap(error, home, progress.current, progress.done)


def bad_csv_row(data_root: str, example_gen) -> Optional[str]:
  """The row CsvExampleGen stopped on, named by file and line (csv_rows);
  None for other formats or when no row is at fault."""
  if example_gen.format != 'csv':
    return None
  patterns = list(stock_example_gen.split_patterns(
      example_gen.pattern).values())
  try:
    splits = retrain.span_files(data_root, patterns)
    return csv_rows.first_problem(splits) if splits else None
  except OSError:  # unreadable: the failure's own line says more
    return None
