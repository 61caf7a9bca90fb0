"""EmbeddingPusher executor: publishes the exports as one version if blessed.

One input and one output channel per export kind
(tpu_embeddings/artifacts/export_kinds.py), named in `CHANNELS`.

Only while the push root serves the version the blessing was validated
against (its report's `validated_against`): the check and the publish hold
the push root's lock together (tpu_embeddings/push_root/publish.py), so a
verdict made against a version no longer served never pushes a model.
Exports of the trained Model and exporter settings the served version was
made from are not pushed again (a rerun whose inputs did not change): the
outputs say `pushed` 0 and which version already serves them.
"""

import json
from typing import Any, Dict, List, Optional

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components import keys
from components.pusher.config import PusherConfig
from tpu_embeddings.artifacts import export_kinds
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.push_root import layout as push_layout
from tpu_embeddings.push_root import manifest as manifest_lib
from tpu_embeddings.push_root import publish

# {export kind: (its exporter's output channel, the pushed one)}.
CHANNELS = {
    export_kinds.SERVING.name: (keys.SERVING_MODEL, keys.PUSHED_SERVING),
    export_kinds.HUB.name: (keys.HUB_MODULE, keys.PUSHED_HUB),
}


def _source_model(artifact: types.Artifact) -> str:
  if artifact.has_custom_property(keys.SOURCE_MODEL):
    return artifact.get_string_custom_property(keys.SOURCE_MODEL)
  return ''


def manifest_fields(exports: Dict[str, types.Artifact],
                    blessing: types.Artifact,
                    pipeline_run_id: str) -> Dict[str, Any]:
  """Manifest fields common to every kind, read from the input artifacts
  ({kind: export artifact})."""
  sources = {kind: _source_model(a) for kind, a in exports.items()
             if _source_model(a)}
  if len(set(sources.values())) > 1:
    shown = ' but '.join(f'{CHANNELS[kind][0]} comes from {source}'
                         for kind, source in sorted(sources.items()))
    raise ValueError(f'EmbeddingPusher: {shown}; push exports of the same '
                     'trainer model')
  source = next(iter(sources.values()), '')
  export_configs = {a.get_string_custom_property(keys.EXPORT_CONFIG)
                    for a in exports.values()
                    if a.has_custom_property(keys.EXPORT_CONFIG)}
  spans: List[int] = []
  if source:
    metadata = model_layout.read_metadata(source) or {}
    spans = [int(s) for s in metadata.get('spans', [])]
  return {
      'source_model': source,
      # One exporter run wrote every kind; '' when the exports do not say.
      'export_config': (export_configs.pop() if len(export_configs) == 1
                        else ''),
      'spans': spans,
      **manifest_lib.read_blessing(blessing.uri),
      'pipeline_run_id': pipeline_run_id or '',
      'blessing': blessing.uri,
  }


def validated_against(blessing_uri: str) -> Optional[Dict[str, Any]]:
  """The served version the blessing's verdict compared with (None: nothing
  was served); ValueError when the blessing does not say."""
  report = manifest_lib.read_report(blessing_uri)
  if not isinstance(report, dict) or keys.VALIDATED_AGAINST not in report:
    raise ValueError(
        f'blessing {blessing_uri} does not record the served version it was '
        f'validated against (no "{keys.VALIDATED_AGAINST}" in its '
        'report.json): nothing pushed; run the pipeline again so that '
        'CheckpointValidator validates against the version served now')
  return report[keys.VALIDATED_AGAINST]


class Executor(base_executor.BaseExecutor):
  """Copies every export under the push root as one version."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    self._log_startup(input_dict, output_dict, exec_properties)
    exports = {kind: artifact_utils.get_single_instance(input_dict[key])
               for kind, (key, _) in CHANNELS.items()}
    blessing = artifact_utils.get_single_instance(
        input_dict[keys.MODEL_BLESSING])
    outputs = {kind: artifact_utils.get_single_instance(output_dict[key])
               for kind, (_, key) in CHANNELS.items()}
    root = push_layout.check_root(exec_properties.get(keys.PUSH_ROOT) or '')
    keep = PusherConfig.from_exec_properties(
        exec_properties, wiring=[keys.PUSH_ROOT]).keep_versions

    if blessing.get_int_custom_property('blessed') != 1:
      logging.info('Model blessing %s is not blessed; nothing pushed.',
                   blessing.uri)
      for artifact in outputs.values():
        artifact.set_int_custom_property(keys.PUSHED, 0)
      return

    run_id = self._context.pipeline_run_id if self._context else ''
    fields = manifest_fields(exports, blessing, run_id or '')
    sources = {kind: export_kinds.get(kind).artifact_path(artifact.uri)
               for kind, artifact in exports.items()}
    result = publish.publish(root, sources, fields, keep_versions=keep,
                             validated_against=validated_against(blessing.uri),
                             unless_served=True)
    if not result.new:
      logging.info('Version %d already serves these exports; nothing pushed.',
                   result.version)
      for artifact in outputs.values():
        artifact.set_int_custom_property(keys.PUSHED, 0)
        artifact.set_string_custom_property(keys.ALREADY_SERVED,
                                            str(result.version))
      return
    for kind, artifact in outputs.items():
      artifact.set_int_custom_property(keys.PUSHED, 1)
      artifact.set_string_custom_property(keys.PUSHED_DESTINATION,
                                          result.dirs[kind])
      artifact.set_string_custom_property(keys.PUSHED_VERSION,
                                          str(result.version))
      artifact.set_string_custom_property(keys.SOURCE_MODEL,
                                          fields['source_model'])
      # A copy of the manifest in the output artifact, for lineage readers.
      import tensorflow as tf
      tf.io.gfile.makedirs(artifact.uri)
      with tf.io.gfile.GFile(
          f'{artifact.uri.rstrip("/")}/{push_layout.MANIFEST_FILENAME}',
          'w') as f:
        f.write(json.dumps(result.manifests[kind], indent=2, sort_keys=True))
    logging.info('Pushed version %d to %s.', result.version, root)
