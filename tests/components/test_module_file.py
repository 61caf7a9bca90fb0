"""A module file as the components load it: the contract checked at load,
and every function of it called through the contract, so that what its code
raises (or wrongly returns) is one line naming the file and the function."""

import os
import textwrap

import pytest

from components import module_file
from tpu_embeddings.artifacts import model_layout
from tpu_embeddings.models import module_files
from tpu_embeddings.models.model_module import ModelModuleError
from tpu_embeddings.models.user_code import UserCodeError

# What docs/model_contract.md's table and model_module.py's
# docstring call required. Written out here, not read from the code under
# test: dropping a name from the contract's checks must fail this test.
REQUIRED = ('embedding_spec', 'loss_fn', 'signatures', 'FEATURES')

# A module defining every name; each function raises RuntimeError naming
# itself when RAISE says so, else returns a harmless value.
COMPLETE = '''
RAISE = {raise_}
FEATURES = {{'item_id': 'item_id'}}
METRICS = {{'recall': 'higher'}}


def _maybe(name):
  if RAISE:
    raise RuntimeError(f'boom in {{name}}')


def embedding_spec(ctx):
  _maybe('embedding_spec')


def model_fn(ctx):
  _maybe('model_fn')


def dense_optimizer(ctx):
  _maybe('dense_optimizer')


def loss_fn(model, activations, extras, ctx, training):
  _maybe('loss_fn')


def signatures(model, embed, ctx):
  _maybe('signatures')


def eval_fn(serve, ctx):
  _maybe('eval_fn')


def extras_fn(ids, examples, ctx):
  _maybe('extras_fn')


def input_fn(ctx, epochs):
  _maybe('input_fn')
'''


def _write(directory, source: str, name: str = 'my_model.py') -> str:
  path = os.path.join(str(directory), name)
  with open(path, 'w', encoding='utf-8') as f:
    f.write(textwrap.dedent(source))
  return path


def _without(source: str, name: str) -> str:
  """`source` with the definition of `name` (a def or an assignment) gone."""
  kept, skipping = [], False
  for line in source.splitlines():
    if line.startswith((f'def {name}(', f'{name} = ')):
      skipping = True
      continue
    if skipping and line and not line.startswith((' ', '\t')):
      skipping = False
    if not skipping:
      kept.append(line)
  return '\n'.join(kept) + '\n'


def _load(path: str):
  return module_file.from_exec_properties({'module_file': path})


def test_a_module_defining_every_name_loads(tmp_path):
  module = _load(_write(tmp_path, COMPLETE.format(raise_=False)))
  assert not module.builtin and module.features == {'item_id': 'item_id'}


@pytest.mark.parametrize('name', REQUIRED)
def test_a_module_lacking_a_required_name_is_refused_at_load(tmp_path, name):
  # FEATURES is required of a module that reads Examples (no input_fn).
  source = COMPLETE.format(raise_=False)
  if name == 'FEATURES':
    source = _without(source, 'input_fn')
  path = _write(tmp_path, _without(source, name))
  with pytest.raises(ModelModuleError) as e:
    _load(path)
  message = str(e.value)
  assert message.startswith(f'module file {path}: {name}: is missing'), message
  assert '\n' not in message


# (function as named in the line, how the pipeline calls it).
CALLS = (
    ('embedding_spec', lambda m: m.embedding_spec(None)),
    ('model_fn', lambda m: m.build_model(None)),
    ('dense_optimizer', lambda m: m.build_dense_optimizer(None)),
    ('loss_fn', lambda m: m.loss(object(), {}, {}, None, True)),
    ('signatures', lambda m: m.signatures(object(), None, None)),
    ('eval_fn', lambda m: m.evaluate({}, None)),
    ('extras_fn', lambda m: m.extras({}, None, None)),
    ('input_fn', lambda m: m.input_fn(None, 1)),
)


@pytest.mark.parametrize('name,call', CALLS, ids=[c[0] for c in CALLS])
def test_an_exception_in_a_function_names_the_file_and_function(
    tmp_path, name, call):
  path = _write(tmp_path, COMPLETE.format(raise_=True))
  module = _load(path)
  with pytest.raises(UserCodeError) as e:
    call(module)
  assert str(e.value) == (f'module file {path}: {name} raised RuntimeError: '
                          f'boom in {name}')
  assert not isinstance(e.value, ValueError)  # not taken for a bad input


def test_model_fn_returning_none_is_named_when_the_loss_needs_a_model(
    tmp_path):
  path = _write(tmp_path, '''
      FEATURES = {'item_id': 'item_id'}

      def embedding_spec(ctx):
        return None

      def model_fn(ctx):
        return None

      def loss_fn(model, activations, extras, ctx, training):
        return model(activations['item_id'])

      def signatures(model, embed, ctx):
        return {}
      ''')
  module = _load(path)
  model = module.build_model(None)
  assert model is None
  with pytest.raises(UserCodeError) as e:
    module.loss(model, {'item_id': 1}, {}, None, True)
  assert str(e.value) == (
      f'module file {path}: loss_fn raised TypeError: \'NoneType\' object is '
      'not callable (model was None: model_fn returned None)')
  with pytest.raises(UserCodeError) as e:
    module.signatures(model, None, None)
  assert str(e.value) == (
      f'module file {path}: signatures returned an empty dict; it must '
      'return a non-empty dict {name: tf.function}')
  with pytest.raises(UserCodeError, match=(
      r'my_model.py: embedding_spec returned a NoneType; it must return an '
      'EmbeddingSpec$')):
    module.embedding_spec(None)


def test_top_level_code_that_raises_is_named(tmp_path):
  path = _write(tmp_path, COMPLETE.format(raise_=False) + '1 / 0\n')
  with pytest.raises(UserCodeError) as e:
    _load(path)
  assert str(e.value) == (f'module file {path}: top-level code raised '
                          'ZeroDivisionError: division by zero')


def test_the_copy_in_a_model_is_named_by_the_users_path(tmp_path):
  """The validator and the exporter run `<model>/user_module.py`; what its
  code raises names the module file the trainer was given."""
  original = _write(tmp_path, COMPLETE.format(raise_=True))
  trained = _load(original)
  model = tmp_path / 'model'
  model.mkdir()
  module_files.write_to_model(trained, str(model))
  model_layout.write_metadata(str(model), module_files.recorded(trained))
  copy = module_file.from_model(str(model))
  assert copy.sha256 == trained.sha256
  with pytest.raises(UserCodeError) as e:
    copy.signatures(object(), None, None)
  assert str(e.value) == (f'module file {original}: signatures raised '
                          'RuntimeError: boom in signatures')
