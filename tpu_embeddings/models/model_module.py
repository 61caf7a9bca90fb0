"""The model contract: what a module file defines, checked when it is loaded.

A module file (TFX's `module_file`; the components load it with TFX's udf
utilities) holds a model for the pipeline's TPU/CPU core. The pipeline owns
the loop, the TPU/CPU split, checkpoints, resume, warm start, validation and
exports; the module defines the model:

  FEATURES              {feature: vocabulary}: the Examples features looked
                        up and the named vocabulary of each one's tokens;
                        features sharing a table share its vocabulary.
  embedding_spec(ctx)   -> EmbeddingSpec: tables, features (named as in
                        FEATURES), the embedding optimizer.
  model_fn(ctx)         -> tf.keras.Model on the activations, or None.
  dense_optimizer(ctx)  -> a Keras optimizer for the model's variables.
  loss_fn(model, activations, extras, ctx, training) -> this replica's share
                        of the global batch's loss (a scalar).
  signatures(model, embed, ctx) -> {name: tf.function on raw features};
                        `embed(raw)` looks raw features up ({feature: [B]
                        strings, a bag's tokens separated by spaces}).
  eval_fn(serve, ctx)   -> {metric: float} of one model's signatures;
  METRICS               {metric: 'higher' | 'lower'}: which way is better.
  references_fn, floors_fn, details_fn: optional hooks of the validation
                        (tpu_embeddings/validation/hooks.py).
  HUB                   {'call': model method, 'features': (...)}: what the
                        TF1 Hub module serves (default: the model's call on
                        every feature).
  extras_fn(ids, examples, ctx) -> {name: dense tensor} made on the host
                        beside the ids, e.g. labels parsed from `examples`,
                        the batch's serialized tf.Examples (optional).
  input_fn(ctx, epochs[, input_context]) -> tf.data.Dataset of (ids, extras)
                        batches in place of FEATURES, per input pipeline (TPU
                        host), its share of global_batch_size with a context.
  SETTINGS              {'trainer.epochs': 3, ...}: pipeline settings the
                        model trains well with; --set and --config override.
  SPEC_FROM_SETTINGS    True: embedding_spec reads trainer.embedding_spec.
  SETTINGS_READ         skip-gram settings the module reads (model_settings).
  AUTOGRAPH             False: the loss functions are graph code as written.
  FUSED_STEP            a fused CPU op computing the whole step (fused_step).
  exported_table(spec)  -> (table, vocabulary) served as text embeddings,
                        streamed, with `neighbors` (models/exported_table.py).

Required: embedding_spec, loss_fn, signatures (with 'serving_default'), and
FEATURES unless the module gives an input_fn; every other name is optional.

`ModelModule` wraps such a module (or the built-in skip-gram one). Every
missing or mistyped name is a ModelModuleError when it is loaded (the rest:
training/contract_check.py, as a command starts); every call of its
functions goes through it, so what one raises, or returns that the contract
does not allow, is a UserCodeError: one line naming the module file (the
user's path, also for the copy a Model carries), the function and the error.
"""

import functools
import hashlib
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from tpu_embeddings.models import user_code
from tpu_embeddings.models.user_code import UserCodeError
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

DIRECTIONS = ('higher', 'lower')
EVALUATION_HOOKS = ('references_fn', 'floors_fn', 'details_fn')
_REQUIRED = ('embedding_spec', 'loss_fn', 'signatures')


class ModelModuleError(ValueError):
  """A module file breaks the model contract; the message says where."""


class ModelModule:
  """A checked module file (or built-in model) and its source."""

  def __init__(self, module: Any, path: str = '', source: str = ''):
    """`path`: the module file as its user knows it, named in every error
    (default: where `module` was imported from)."""
    self._m = module
    self.path = path or getattr(module, '__file__', '') or repr(module)
    self.source = source
    self.builtin = getattr(module, 'BUILTIN', '')
    self._check()

  # -- identity ---------------------------------------------------------------
  @property
  def sha256(self) -> str:
    """SHA-256 of the source ('' for a built-in model)."""
    if not self.source:
      return ''
    return hashlib.sha256(self.source.encode('utf-8')).hexdigest()

  def _fail(self, name: str, message: str):
    raise ModelModuleError(f'module file {self.path}: {name}: {message}')

  def _get(self, name: str, default: Any = None) -> Any:
    return getattr(self._m, name, default)

  def _returned(self, function: str, what: str):
    raise UserCodeError(self.path, function, f'returned {what}')

  def call(self, function: str, fn: Callable[..., Any], *args,
           hint: str = '', **kwargs) -> Any:
    """`fn(*args, **kwargs)`, a function of the module (named `function` in
    errors): whatever it raises becomes a UserCodeError (`hint` appended),
    except the pipeline's stop signals (not Exceptions) and the contract's
    own errors. The built-in model's errors are the pipeline's: unchanged."""
    if self.builtin:
      return fn(*args, **kwargs)
    try:
      return fn(*args, **kwargs)
    except (ModelModuleError, UserCodeError):
      raise
    except Exception as e:
      raise UserCodeError(self.path, function,
                          user_code.raised(e) + hint) from e

  # -- checks -----------------------------------------------------------------
  def _check(self):
    required = _REQUIRED[:2] if self.builtin else _REQUIRED
    for name in required:
      if not callable(self._get(name)):
        self._fail(name, 'is missing or not a function (see the "write your '
                   'own model" section of the README)')
    for name in ('model_fn', 'dense_optimizer', 'extras_fn', 'input_fn',
                 'eval_fn') + EVALUATION_HOOKS:
      value = self._get(name)
      if value is not None and not callable(value):
        self._fail(name, f'must be a function, got {type(value).__name__}')
    self._check_features()
    self._check_metrics()
    self._check_hub()
    settings = self._get('SETTINGS', {})
    if not isinstance(settings, dict) or not all(
        isinstance(k, str) for k in settings):
      self._fail('SETTINGS', 'must be a dict {"section.field": value}')

  def _check_features(self):
    features = self._get('FEATURES')
    if features is None:
      if not (self.builtin or self._get('input_fn')):
        self._fail('FEATURES', 'is missing: define {feature: vocabulary} '
                   'for the Examples features the model looks up')
      return
    if not isinstance(features, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v
        for k, v in features.items()):
      self._fail('FEATURES', 'must be a dict of non-empty strings {feature: '
                 f'vocabulary name}}, got {features!r}')

  def _check_metrics(self):
    metrics, eval_fn = self._get('METRICS'), self._get('eval_fn')
    if metrics is None and eval_fn is None:
      return
    if metrics is None or eval_fn is None:
      self._fail('METRICS' if metrics is None else 'eval_fn',
                 'is missing: eval_fn and METRICS go together')
    if not isinstance(metrics, dict) or not metrics or not all(
        isinstance(k, str) and v in DIRECTIONS for k, v in metrics.items()):
      self._fail('METRICS', f'must be a dict {{metric: "higher" or '
                 f'"lower"}}, got {metrics!r}')

  def _check_hub(self):
    hub = self._get('HUB')
    if hub is None:
      return
    if not isinstance(hub, dict) or set(hub) - {'call', 'features'}:
      self._fail('HUB', 'must be a dict with "call" (a model method name) '
                 f'and "features" (a tuple of feature names), got {hub!r}')
    features = hub.get('features', ())
    if not isinstance(features, (list, tuple)) or not all(
        f in self.features for f in features):
      self._fail('HUB', f'features {features!r} must be names in FEATURES '
                 f'{sorted(self.features)}')
    if not isinstance(hub.get('call', ''), (str, type(None))):
      self._fail('HUB', 'call must be the name of a model method')

  # -- declarations -----------------------------------------------------------
  @property
  def features(self) -> Dict[str, str]:
    return dict(self._get('FEATURES') or {})

  @property
  def metrics(self) -> Dict[str, str]:
    return dict(self._get('METRICS') or {})

  @property
  def settings(self) -> Dict[str, Any]:
    return dict(self._get('SETTINGS') or {})

  @property
  def hub_call(self) -> str:
    """The model method the Hub module calls ('' = the model itself)."""
    return (self._get('HUB') or {}).get('call') or ''

  @property
  def hub_features(self) -> Tuple[str, ...]:
    hub = self._get('HUB') or {}
    return tuple(hub.get('features') or sorted(self.features))

  @property
  def has_eval(self) -> bool:
    return self._get('eval_fn') is not None

  @property
  def input_fn(self) -> Optional[Callable[..., Any]]:
    """The module's input_fn(ctx, epochs), called through `call`."""
    return self.hook('input_fn')

  def declared(self, name: str, default: Any = None) -> Any:
    """A declaration of the module (SPEC_FROM_SETTINGS, AUTOGRAPH, ...)."""
    return self._get(name, default)

  @property
  def activation_gradients(self) -> Optional[Callable[..., Any]]:
    """A built-in's hand-derived gradients w.r.t. the activations (a speed
    path the generic tape step is checked against); None for modules."""
    return self._get('activation_gradients')

  def hook(self, name: str) -> Optional[Callable[..., Any]]:
    """An optional function of the module by name (None when absent),
    called through `call`."""
    fn = self._get(name)
    if fn is None or self.builtin:
      return fn
    return functools.partial(self.call, name, fn)

  # -- calls ------------------------------------------------------------------
  def embedding_spec(self, ctx) -> EmbeddingSpec:
    spec = self.call('embedding_spec', self._m.embedding_spec, ctx)
    if not isinstance(spec, EmbeddingSpec):
      self._returned('embedding_spec', f'a {type(spec).__name__}; it must '
                     'return an EmbeddingSpec')
    return spec

  def build_model(self, ctx):
    """model_fn(ctx), checked: a tf.Module holding no embedding object."""
    model_fn = self._get('model_fn')
    model = self.call('model_fn', model_fn, ctx) if model_fn else None
    if model is None:
      return None
    import tensorflow as tf
    if not isinstance(model, tf.Module):
      self._returned('model_fn', f'a {type(model).__name__}; it must return '
                     'a tf.keras.Model (or None)')
    from tensorflow.python.tpu import tpu_embedding_base
    if any(isinstance(o, tpu_embedding_base.TPUEmbeddingBase)
           for o in tf.train.TrackableView(model).descendants()):
      self._returned('model_fn', 'a model holding an embedding object; the '
                     'pipeline creates the embedding and saves it beside the '
                     'model, never inside it (its checkpoint keys must stay '
                     'embedding/<table>/...)')
    return model

  def build_dense_optimizer(self, ctx):
    make = self._get('dense_optimizer')
    if make is None:
      self._fail('dense_optimizer', 'is missing: model_fn returned a model '
                 'with trainable variables')
    return self.call('dense_optimizer', make, ctx)

  def loss(self, model, activations, extras, ctx, training: bool):
    hint = user_code.no_model_hint(model, self._get('model_fn') is not None)
    return self.call('loss_fn', self._m.loss_fn, model, activations, extras,
                     ctx, training, hint=hint)

  def extras(self, ids, examples, ctx) -> Dict[str, Any]:
    extras_fn = self._get('extras_fn')
    if not extras_fn:
      return {}
    found = self.call('extras_fn', extras_fn, ids, examples, ctx)
    if not isinstance(found, Mapping):
      self._returned('extras_fn', f'a {type(found).__name__}; it must return '
                     'a dict {name: dense tensor}')
    return dict(found)

  def signatures(self, model, embed, ctx) -> Dict[str, Any]:
    hint = user_code.no_model_hint(model, self._get('model_fn') is not None)
    found = self.call('signatures', self._m.signatures, model, embed, ctx,
                      hint=hint)
    if not isinstance(found, dict) or not found:
      self._returned('signatures', f'{user_code.shown(found)}; it must '
                     'return a non-empty dict {name: tf.function}')
    return found

  def evaluate(self, serve: Mapping[str, Any], ctx) -> Dict[str, float]:
    """eval_fn(serve, ctx), checked to give a number for every metric;
    other numbers it gives (e.g. how many pairs were covered) are kept."""
    values = self.call('eval_fn', self._m.eval_fn, serve, ctx)
    if not isinstance(values, dict):
      self._returned('eval_fn', f'a {type(values).__name__}; it must return '
                     'a dict {metric: number}')
    missing = sorted(set(self.metrics) - set(values))
    if missing:
      self._returned('eval_fn', f'no value for {missing} (METRICS)')
    extra = {k: v for k, v in values.items() if k not in self.metrics
             and isinstance(v, (int, float)) and not isinstance(v, bool)}
    try:
      return {**{k: None if values[k] is None else float(values[k])
                 for k in self.metrics}, **extra}
    except (TypeError, ValueError) as e:
      raise UserCodeError(self.path, 'eval_fn', 'returned a value that is '
                          f'not a number ({user_code.first_line(e)})') from e
