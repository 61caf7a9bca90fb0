"""CheckpointValidator executor: validate the trainer's Model, write a blessing.
"""

from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components import keys
from components import module_file
from components.validator import blessing as blessing_lib
from components.validator import module_validation
from components.validator import validation
from components.validator.config import ValidatorConfig
from tpu_embeddings.push_root import served


class Executor(base_executor.BaseExecutor):
  """Validates the trainer's Model and writes a ModelBlessing."""

  def Do(self, input_dict: Dict[str, List[types.Artifact]],
         output_dict: Dict[str, List[types.Artifact]],
         exec_properties: Dict[str, Any]) -> None:
    self._log_startup(input_dict, output_dict, exec_properties)
    config = ValidatorConfig.from_exec_properties(
        exec_properties, wiring=[keys.PUSH_ROOT, keys.SERVED_BASELINE])
    model = artifact_utils.get_single_instance(input_dict[keys.MODEL])
    examples = artifact_utils.get_single_instance(input_dict[keys.EXAMPLES])
    vocabulary = artifact_utils.get_single_instance(input_dict[keys.VOCABULARY])
    blessing = artifact_utils.get_single_instance(output_dict[keys.BLESSING])
    push_root = exec_properties.get(keys.PUSH_ROOT) or ''
    # Before the baseline is read: a push landing in between makes the
    # verdict look stale to the pusher, never fresh.
    validated_against = served.identity(push_root)
    module = module_file.from_model(model.uri)
    if module.builtin:
      result = validation.validate(model.uri, examples.uri, vocabulary.uri,
                                   config, push_root)
    else:  # a module file's model, read with its own code
      result = module_validation.validate(model.uri, examples.uri, config,
                                          module, push_root)
    result.report[keys.VALIDATED_AGAINST] = validated_against
    # TFX passes input artifacts with their MLMD ids.
    blessing_lib.write(blessing, result.report, result.candidate_norms,
                       result.baseline_norms, model_id=model.id)
    logging.info('CheckpointValidator: %s (%s)', result.report['summary'],
                 blessing.uri)
