"""Container entrypoint of the ExampleGen task on open-source Kubeflow
Pipelines.

    python -m pipelines.kubeflow.example_gen --executor_class_path ... \
        --json_serialized_invocation_args '{{$}}' [beam args]

TFX compiles FileBasedExampleGen with a pre-cache-check driver that resolves
`{SPAN}` to the latest span; Vertex AI runs it, open-source KFP does not. This
entrypoint runs TFX's V2 ExampleGen driver and then TFX's V2 executor
entrypoint in one container with the same arguments: the driver writes the
resolved span, version, fingerprint and input_config to the task's output
file, the executor entrypoint reads them from there, and the span,
fingerprint and version the driver put on the Examples artifact are merged
back into the executor's final output (which the executor overwrites).
SIGTERM stops it cleanly, as every task (container.py).
"""

import argparse
import sys
from typing import List, Optional

from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
from tfx.dsl.io import fileio
from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_run_executor
from tfx.orchestration.kubeflow.v2.file_based_example_gen import driver


def _parse(argv: List[str]):
  parser = argparse.ArgumentParser(
      prog='python -m pipelines.kubeflow.example_gen')
  parser.add_argument('--executor_class_path', required=True)
  parser.add_argument('--json_serialized_invocation_args', required=True)
  parser.add_argument('--json_serialized_inputs_spec_args', default=None)
  return parser.parse_known_args(argv)


def _read_output(path: str) -> pipeline_spec_pb2.ExecutorOutput:
  output = pipeline_spec_pb2.ExecutorOutput()
  with fileio.open(path, 'rb') as f:
    json_format.Parse(f.read(), output, ignore_unknown_fields=True)
  return output


def merge_driver_metadata(driver_output: pipeline_spec_pb2.ExecutorOutput,
                          final: pipeline_spec_pb2.ExecutorOutput) -> None:
  """Copies the driver's artifact metadata (span, fingerprint, version) into
  the executor's output where the executor did not set it."""
  for key, driver_list in driver_output.artifacts.items():
    final_list = final.artifacts[key].artifacts
    for i, driver_artifact in enumerate(driver_list.artifacts):
      if i >= len(final_list):
        final_list.add().CopyFrom(driver_artifact)
        continue
      for field, value in driver_artifact.metadata.fields.items():
        if field not in final_list[i].metadata.fields:
          final_list[i].metadata.fields[field].CopyFrom(value)


def main(argv: Optional[List[str]] = None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  args, beam_args = _parse(argv)
  executor_input = pipeline_spec_pb2.ExecutorInput()
  json_format.Parse(args.json_serialized_invocation_args, executor_input,
                    ignore_unknown_fields=True)
  output_file = executor_input.outputs.output_file
  if not output_file:
    raise ValueError('executor input has no outputs.outputFile; run this '
                     'entrypoint from a Kubeflow Pipelines task')

  driver.main(args)  # resolves the span; writes output_file
  driver_output = _read_output(output_file)
  kubeflow_v2_run_executor.main((args, beam_args))  # reads, then rewrites it
  final = _read_output(output_file)
  merge_driver_metadata(driver_output, final)
  with fileio.open(output_file, 'wb') as f:
    f.write(json_format.MessageToJson(final, sort_keys=True))
  return 0


if __name__ == '__main__':
  from pipelines.kubeflow import container
  sys.exit(container.run(main, sys.argv[1:]))
