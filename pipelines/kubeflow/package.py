"""The compiled pipeline package, read and checked before any API request.

kfp is imported only when a package is read: importing it costs every
command of the CLI well over a second.
"""

import dataclasses
import os
from typing import Any, Dict, Optional

import yaml

from pipelines.kubeflow import parameters as kubeflow_parameters


@dataclasses.dataclass
class Package:
  """A compiled pipeline package, checked to parse as a KFP PipelineSpec."""
  path: str
  pipeline_name: str
  default_pipeline_root: str
  parameters: Dict[str, Any]  # name -> default value (None: required)
  parameter_types: Dict[str, str] = dataclasses.field(
      default_factory=dict)  # name -> KFP type, e.g. STRING


def read_package(path: str) -> Package:
  """Loads a compiled YAML package; a bad file is a one-line error."""
  from google.protobuf import json_format
  from kfp.pipeline_spec import pipeline_spec_pb2
  if not os.path.isfile(path):
    raise FileNotFoundError(
        f'pipeline package {path}: no such file; write it with '
        '`python -m pipelines compile --output PATH ...`')
  if not path.endswith(('.yaml', '.yml')):
    raise ValueError(f'pipeline package {path}: expected a .yaml file '
                     '(kfp.Client does not accept TFX\'s .json job spec)')
  try:
    with open(path) as f:
      docs = [d for d in yaml.safe_load_all(f) if d is not None]
    if not docs:
      raise ValueError('empty file')
    spec = json_format.ParseDict(docs[0], pipeline_spec_pb2.PipelineSpec())
  except (yaml.YAMLError, json_format.ParseError, ValueError) as e:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e)
    raise ValueError(f'pipeline package {path} is not a KFP pipeline spec '
                     f'({first}); recompile it with '
                     '`python -m pipelines compile`') from None
  if not spec.pipeline_info.name or not spec.root.dag.tasks:
    raise ValueError(f'pipeline package {path} has no pipeline name or no '
                     'tasks; recompile it with `python -m pipelines compile`')
  parameters, types = {}, {}
  for name, p in spec.root.input_definitions.parameters.items():
    parameters[name] = (json_format.MessageToDict(p.default_value)
                        if p.HasField('default_value') else None)
    types[name] = pipeline_spec_pb2.ParameterType.ParameterTypeEnum.Name(
        p.parameter_type)
  return Package(path=path, pipeline_name=spec.pipeline_info.name,
                 default_pipeline_root=spec.default_pipeline_root,
                 parameters=parameters, parameter_types=types)


def _arguments(package: Package,
               arguments: Optional[Dict[str, Any]]) -> Dict[str, Any]:
  return kubeflow_parameters.check_arguments(
      package.parameters, package.parameter_types, arguments)


def checked(package_path: str, pipeline_root: Optional[str],
            arguments: Optional[Dict[str, Any]]):
  """(package, pipeline root, arguments), checked before any request."""
  package = read_package(package_path)
  return (package, _pipeline_root(package, pipeline_root),
          _arguments(package, arguments))


def _pipeline_root(package: Package, pipeline_root: Optional[str]) -> str:
  root = pipeline_root or package.default_pipeline_root
  if not root:
    raise ValueError(f'{package.path} has no default pipeline root: pass '
                     '--pipeline-root URI (e.g. gs://bucket/tfx)')
  return root
