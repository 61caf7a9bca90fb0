"""The whole model contract checked on a tiny untrained instance: what the
validator and the exporter refuse after training is refused before it, in
one line naming the module file as its user gave it."""

import os

import pytest

from components import module_file
from pipelines.config import PipelineConfig
from tests.support import interaction_fixtures
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models import module_files
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.models.user_code import UserCodeError
from tpu_embeddings.training import contract_check

SETTINGS = PipelineConfig().trainer


def _module(directory, old: str = '', new: str = ''):
  """The two-tower example with `old` replaced by `new`, as my_model.py in
  `directory`, loaded as the components load it; (module, path)."""
  with open(interaction_fixtures.MODULE_FILE, encoding='utf-8') as f:
    source = f.read()
  assert old in source
  path = os.path.join(str(directory), 'my_model.py')
  with open(path, 'w', encoding='utf-8') as f:
    f.write(source.replace(old, new, 1) if old else source)
  return module_file.from_exec_properties({'module_file': path}), path


def test_the_example_module_holds_every_signature(tmp_path):
  module, _ = _module(tmp_path)
  assert contract_check.check(module, SETTINGS) == contract_check.Checked(
      ('candidate', 'examples', 'serving_default'), warnings=())


# (old, new, the line after "module file <path>: ", the error's type).
BROKEN = {
    'no serving_default': (
        "{'serving_default': query", "{'query': query",
        "signatures: give a 'serving_default' signature (what TF Serving "
        'answers when a request names none)', ValueError),
    'a default input not in FEATURES': (
        'def query(user_id, history):\n    return {\'embedding\': '
        'model.query(embed(\n        {\'user_id\': user_id,',
        'def query(user, history):\n    return {\'embedding\': '
        'model.query(embed(\n        {\'user_id\': user,',
        "signature 'serving_default' takes ['user'], which are not in "
        "FEATURES: the 'examples' signature parses FEATURES from "
        'tf.Examples', ValueError),
    'a neighbors signature the neighbors command cannot call': (
        "'candidate': candidate}", "'candidate': candidate, "
        "'neighbors': candidate}",
        "signature 'neighbors' takes ['item_category', 'item_id'] and "
        "answers ['embedding']; it must take one query input (and an "
        "integer 'k') and answer 'scores' and one other output",
        ModelModuleError),
    'a table no feature reads': (
        "TableSpec('category', 8, combiner='mean')),",
        "TableSpec('category', 8, combiner='mean'), TableSpec('spare', 4)),",
        "vocabulary '(single)' is not in this artifact", ModelModuleError),
    'a HUB call the model lacks': (
        "HUB = {'call': 'query'", "HUB = {'call': 'queries'",
        "HUB raised AttributeError: 'TwoTower' object has no attribute "
        "'queries'", UserCodeError),
    'a spec feature outside FEATURES': (
        "FeatureSpec('item_category', 'category')",
        "FeatureSpec('category', 'category')",
        "embedding_spec: feature(s) ['category'] are not in FEATURES",
        ModelModuleError),
    'a table read by two vocabularies': (
        "FeatureSpec('history', 'item')", "FeatureSpec('history', 'user')",
        "embedding spec: tables.user: its features ['history', 'user_id'] "
        "come from different vocabularies ['item_id', 'user_id']",
        ModelModuleError),
}


@pytest.mark.parametrize('case', sorted(BROKEN))
def test_a_broken_contract_is_one_line_naming_the_file(tmp_path, case):
  old, new, line, error = BROKEN[case]
  module, path = _module(tmp_path, old, new)
  with pytest.raises(error) as e:
    contract_check.check(module, SETTINGS)
  message = str(e.value)
  assert message.startswith(f'module file {path}: {line}'), message
  assert '\n' not in message


def test_a_table_of_a_fixed_size_is_left_to_the_trainer(tmp_path):
  """Its real vocabulary is not counted yet: no synthetic one refuses it."""
  module, _ = _module(tmp_path, "TableSpec('category', 8, combiner='mean')",
                      "TableSpec('category', 8, vocabulary_size=11)")
  assert 'serving_default' in contract_check.check(module,
                                                    SETTINGS).signatures


def test_a_module_reading_its_own_input_has_nothing_checked_here():
  builtin = module_file.from_exec_properties({'module_file': ''})
  assert contract_check.check(
      builtin, PipelineConfig().trainer_config()) == contract_check.Checked()


def test_adagrad_at_tfs_learning_rate_is_warned_of(tmp_path):
  """Under the batch-scaled loss its rows barely move (measured in
  docs/model_contract.md); the example's explicit values are not warned
  of (test_the_example_module_holds_every_signature)."""
  module, path = _module(
      tmp_path, "OptimizerSpec('adagrad', (('initial_accumulator_value', "
      "1e-3),\n                                          ('learning_rate', "
      "0.2))))", "OptimizerSpec('adagrad'))")
  checked = contract_check.check(module, SETTINGS)
  assert checked.warnings == (
      f'module file {path}: embedding_spec: adagrad at TF\'s default '
      'learning_rate 0.001 barely moves the rows under the batch-scaled '
      'loss; give it a learning_rate (0.05 to 0.2) and an '
      'initial_accumulator_value (1e-3): docs/model_contract.md',)
  assert 'serving_default' in checked.signatures


def test_the_copy_in_a_model_names_the_users_file(tmp_path):
  """The validator and the exporter load `<model>/user_module.py`; what it
  breaks names the module file the trainer was given."""
  trained, path = _module(tmp_path, *BROKEN['no serving_default'][:2])
  model = tmp_path / 'model'
  model.mkdir()
  module_files.write_to_model(trained, str(model))
  model_layout.write_metadata(str(model), module_files.recorded(trained))
  copy = module_file.from_model(str(model))
  with pytest.raises(ValueError) as e:
    contract_check.check(copy, SETTINGS)
  assert str(e.value).startswith(f'module file {path}: signatures: give a '
                                 "'serving_default' signature"), e.value
