"""CheckpointValidator executor: validate the trainer's Model, write a blessing.

The validation itself is the library's (`tpu_embeddings.validation`), one
path for every model; the executor loads the Model's module, records which
served version the verdict was reached against and on which span of the data
the metrics were measured (the Examples' `span`, which ExampleGen sets:
`eval_data.span` of the report, None when the Examples have none; the
pusher records it beside the metrics), and writes the blessing.
"""

from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.dsl.components.base import base_executor
from tfx.types import artifact_utils

from components import keys
from components import module_file
from components.validator import blessing as blessing_lib
from tpu_embeddings.push_root import served
from tpu_embeddings.training import model_output
from tpu_embeddings.validation import validate
from tpu_embeddings.validation.config import ValidatorConfig


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
    result = validate.validate(model.uri, examples.uri, config,
                               module_file.from_model(model.uri), push_root)
    result.report[keys.VALIDATED_AGAINST] = validated_against
    result.report['eval_data']['vocabulary'] = vocabulary.uri
    spans = model_output.spans([examples], keys.SPAN)
    result.report['eval_data'][keys.SPAN] = spans[0] if spans else None
    # TFX passes input artifacts with their MLMD ids.
    blessing_lib.write(blessing, result, model_id=model.id)
    logging.info('CheckpointValidator: %s (%s)', result.report['summary'],
                 blessing.uri)
