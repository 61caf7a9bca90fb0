"""The ExampleGen task of the compiled pipeline, run as its container would:
the arguments and parameters come from the compiled YAML, the executor input
is what Kubeflow Pipelines hands the pod, and the task must read the latest
span (open-source KFP does not run TFX's span driver hook for it)."""

import json

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2
from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils

from pipelines.kubeflow import compile as kubeflow_compile
from pipelines.kubeflow import example_gen as kubeflow_example_gen
from pipelines.kubeflow import spec_edits
from tpu_embeddings.artifacts import examples_io


def _write_span(data_root, span, token, lines=12):
  folder = data_root / f'span-{span}'
  folder.mkdir(parents=True)
  (folder / 'part.txt').write_text(
      ''.join(f'{token}{i} {token}{i + 1} {token}{i + 2}\n'
              for i in range(lines)))


def _run_task(spec, task, out_dir, run_parameters=None):
  """Runs `task`'s container command in-process with a KFP executor input;
  a run-time parameter takes its value from `run_parameters` or its default,
  as Kubeflow Pipelines resolves it."""
  tasks = spec['root']['dag']['tasks']
  component = spec['components'][tasks[task]['componentRef']['name']]
  container = spec['deploymentSpec']['executors'][
      component['executorLabel']]['container']
  assert container['command'] == list(spec_edits.EXAMPLE_GEN_COMMAND)
  declared = spec['root']['inputDefinitions']['parameters']
  run_parameters = run_parameters or {}
  parameters = {}
  for name, p in tasks[task]['inputs']['parameters'].items():
    if 'componentInputParameter' in p:
      root = p['componentInputParameter']
      parameters[name] = run_parameters.get(
          root, declared[root]['defaultValue'])
    else:
      parameters[name] = p['runtimeValue']['constant']
  outputs = {
      name: {'artifacts': [{
          'name': f'{task}-{name}', 'type': a['artifactType'],
          'uri': str(out_dir / name)}]}
      for name, a in component['outputDefinitions']['artifacts'].items()}
  output_file = out_dir / 'executor_output.json'
  executor_input = {'inputs': {'parameterValues': parameters},
                    'outputs': {'artifacts': outputs,
                                'outputFile': str(output_file)}}
  args = [json.dumps(executor_input) if a == '{{$}}' else a
          for a in container['args']]
  assert kubeflow_example_gen.main(args) == 0
  output = pipeline_spec_pb2.ExecutorOutput()
  json_format.Parse(output_file.read_text(), output)
  return output


def _downstream_view(output, spec):
  """The Examples artifact as the next task's container parses it (KFP
  adds the type from the spec; the metadata comes from the task's output)."""
  artifact_type = spec['components']['FileBasedExampleGen'][
      'outputDefinitions']['artifacts']['examples']['artifactType']
  [artifact] = output.artifacts['examples'].artifacts
  json_format.ParseDict(artifact_type, artifact.type)
  [examples] = kubeflow_v2_entrypoint_utils.parse_raw_artifact_dict(
      output.artifacts, {})['examples']
  return examples


def test_example_gen_task_reads_the_latest_span(tmp_path):
  data_root = tmp_path / 'data'
  _write_span(data_root, 1, 'old')
  _write_span(data_root, 2, 'new')
  package = tmp_path / 'pipeline.yaml'
  kubeflow_compile.compile_pipeline(
      str(package), image='example/tpu-embeddings:test',
      pipeline_root=str(tmp_path / 'root'), data_root=str(data_root),
      push_root=str(tmp_path / 'pushed'))
  spec = next(yaml.safe_load_all(package.read_text()))

  output = _run_task(spec, 'FileBasedExampleGen', tmp_path / 'run1')
  uri = str(tmp_path / 'run1' / 'examples')
  tokens = {t for split in ('train', 'eval')
            for seq in examples_io.read_sequences(uri, split) for t in seq}
  assert tokens and all(t.startswith('new') for t in tokens)
  examples = _downstream_view(output, spec)
  assert examples.get_int_custom_property('span') == 2
  assert examples.get_string_custom_property('input_fingerprint')
  assert json.loads(examples.split_names) == ['train', 'eval']

  # A span landing later is what the next (scheduled) run reads.
  _write_span(data_root, 3, 'newer', lines=4)
  output = _run_task(spec, 'FileBasedExampleGen', tmp_path / 'run2')
  uri = str(tmp_path / 'run2' / 'examples')
  tokens = {t for seq in examples_io.read_sequences(uri, 'train') for t in seq}
  assert tokens and all(t.startswith('newer') for t in tokens)
  assert _downstream_view(output, spec).get_int_custom_property('span') == 3

  # The data_root run-time parameter points a run at another corpus.
  other = tmp_path / 'other'
  _write_span(other, 7, 'other', lines=4)
  output = _run_task(spec, 'FileBasedExampleGen', tmp_path / 'run3',
                     run_parameters={'data_root': str(other)})
  uri = str(tmp_path / 'run3' / 'examples')
  tokens = {t for seq in examples_io.read_sequences(uri, 'train') for t in seq}
  assert tokens and all(t.startswith('other') for t in tokens)
  assert _downstream_view(output, spec).get_int_custom_property('span') == 7
