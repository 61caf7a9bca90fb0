"""Reading a compiled KFP package, for the Kubeflow compilation tests.

`IMAGE` and `ROOTS` are what the tests compile with; `load` checks both YAML
documents against the KFP protos kfp.Client parses.
"""

import json

import yaml
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

IMAGE = 'us-docker.pkg.dev/my-project/ml/tpu-embeddings:1.2.3'
ROOTS = dict(pipeline_root='gs://my-bucket/tfx',
             data_root='gs://my-bucket/corpus',
             push_root='gs://my-bucket/embeddings')


def load(path):
  """Both documents, checked against the KFP protos kfp.Client parses."""
  with open(path) as f:
    docs = list(yaml.safe_load_all(f))
  json_format.ParseDict(docs[0], pipeline_spec_pb2.PipelineSpec())
  if len(docs) > 1:
    json_format.ParseDict(docs[1], pipeline_spec_pb2.PlatformSpec())
  return docs


def executor(spec, task):
  """(executor label, executor) of a task."""
  label = spec['components'][spec['root']['dag']['tasks'][task][
      'componentRef']['name']]['executorLabel']
  return label, spec['deploymentSpec']['executors'][label]


def param(spec, task, name):
  """A task's parameter, or a setting of its JSON `config` parameter; a
  run-time parameter's compiled default."""
  params = spec['root']['dag']['tasks'][task]['inputs']['parameters']
  if name not in params:
    return json.loads(param(spec, task, 'config'))[name]
  if 'componentInputParameter' in params[name]:
    return spec['root']['inputDefinitions']['parameters'][params[name][
        'componentInputParameter']]['defaultValue']
  return params[name]['runtimeValue']['constant']


def resources(spec):
  """{task: its container's resources}."""
  return {task: executor(spec, task)[1]['container']['resources']
          for task in spec['root']['dag']['tasks']}
