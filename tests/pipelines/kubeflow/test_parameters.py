"""Run-time parameter values: typed, merged over the compiled config, checked
before any request."""

import json

import pytest

from components.vocabulary.config import VocabularyConfig
from pipelines.kubeflow import parameters as kubeflow_parameters
from tpu_embeddings.training.config import TrainerConfig

COMPILED_TRAINER = TrainerConfig(train_steps=600, tpu='auto').to_json()
DECLARED = {'data_root': 'gs://b/corpus', 'push_root': 'gs://b/pushed',
            'trainer_config': COMPILED_TRAINER,
            'vocabulary_config': VocabularyConfig().to_json(),
            'steps': 1, 'rate': 0.5}
TYPES = {'data_root': 'STRING', 'push_root': 'STRING',
         'trainer_config': 'STRING', 'vocabulary_config': 'STRING',
         'steps': 'NUMBER_INTEGER', 'rate': 'NUMBER_DOUBLE'}


def check(arguments):
  return kubeflow_parameters.check_arguments(DECLARED, TYPES, arguments)


def test_a_config_field_is_merged_over_the_compiled_config():
  out = check({'trainer_config.train_steps': '20000',
               'trainer_config': '{"batch_size": 4096}'})
  trainer = json.loads(out['trainer_config'])
  assert trainer['train_steps'] == 20000 and trainer['batch_size'] == 4096
  # Everything else stays as compiled, the TPU setting included.
  assert trainer['tpu'] == 'auto'
  assert trainer['embedding_spec'] == json.loads(COMPILED_TRAINER)[
      'embedding_spec']
  assert TrainerConfig.from_json(out['trainer_config']).train_steps == 20000


def test_roots_and_typed_values():
  assert check({'data_root': 'gs://other/corpus', 'steps': '7',
                'rate': '1'}) == {'data_root': 'gs://other/corpus',
                                  'steps': 7, 'rate': 1.0}
  assert check({}) == {}


@pytest.mark.parametrize('arguments, message', [
    ({'nope': '1'}, '--param nope: the pipeline has no such parameter'),
    ({'trainer_config.train_steps': 'abc'},
     '--param trainer_config: EmbeddingTrainer parameter train_steps must be '
     'an integer'),
    ({'trainer_config.nope': '1'},
     "--param trainer_config: EmbeddingTrainer: unknown parameter 'nope'"),
    ({'trainer_config': '[1]'}, 'expected a JSON object'),
    ({'trainer_config.tpu': '""'},
     '--param trainer_config.tpu: fixed when compiling'),
    ({'vocabulary_config.max_tokens': '5'}, 'the table sizes the pods'),
    ({'data_root.x': 'y'}, 'data_root is not a config parameter'),
    ({'data_root': 'gs://b/with space'}, '--param data_root'),
    ({'steps': '1.5'}, '--param steps: expected NUMBER_INTEGER'),
])
def test_bad_values_are_one_line_naming_the_parameter(arguments, message):
  with pytest.raises(ValueError) as e:
    check(arguments)
  assert message in str(e.value)
  assert len(str(e.value).splitlines()) == 1
