"""Skip-gram with negative sampling: the built-in model of the contract.

The pipeline trains it as it trains any module file
(`tpu_embeddings.models.model_module`): its spec comes from the trainer's
settings, `input_fn` turns the `tokens` of the train split into (target,
context, negatives) batches, `loss_fn` scores them on the activations and no
dense model sits on top. `activation_gradients` gives the loss's gradients
w.r.t. the activations derived by hand, the CPU trainer's speed path; the
generic step differentiates `loss_fn` instead and is checked to agree.
Its evaluation is the contract's too: METRICS, `eval_fn` and the optional
validation hooks (`references_fn`, `floors_fn`, `details_fn`) of
`tpu_embeddings.models.skipgram_eval`. What training and the exports treat
differently is declared, as any module may: SPEC_FROM_SETTINGS,
SETTINGS_READ, AUTOGRAPH, FUSED_STEP, `heldout_pairs`, and `exported_table`
(its table exported streamed, multi-GB ones included, with `neighbors`).
"""

from typing import Optional, Sequence

import tensorflow as tf

from tpu_embeddings.core.splits import EVAL_SPLIT
from tpu_embeddings.core.splits import TRAIN_SPLIT
from tpu_embeddings.models import heldout
from tpu_embeddings.models import skipgram
from tpu_embeddings.models import skipgram_eval
from tpu_embeddings.models import skipgram_input
from tpu_embeddings.models import skipgram_loss
from tpu_embeddings.models.skipgram_config import EVAL_SEQUENCES
from tpu_embeddings.models.skipgram_config import SKIPGRAM_SETTINGS
from tpu_embeddings.models.skipgram_features import CONTEXT_FEATURE
from tpu_embeddings.models.skipgram_features import NEGATIVES_FEATURE
from tpu_embeddings.models.skipgram_features import SKIP_GRAM_STEP
from tpu_embeddings.models.skipgram_features import TARGET_FEATURE
from tpu_embeddings.models.skipgram_features import skipgram_tables
from tpu_embeddings.models.skipgram_table import default_spec

BUILTIN = 'skipgram'
# Declarations of the model contract (model_module.py): the spec is the
# trainer's `embedding_spec` setting; the loss functions are graph code as
# written; the CPU trainer's fused op computes the whole step.
SPEC_FROM_SETTINGS = True
# Every setting made for skip-gram is read here.
SETTINGS_READ = SKIPGRAM_SETTINGS
AUTOGRAPH = False
FUSED_STEP = SKIP_GRAM_STEP
# Passes after the first read the train split's looked-up ids from memory
# when the vocabulary counts at most this many tokens (4 bytes each, plus
# the out-of-vocabulary tokens'); larger corpora are parsed on every pass.
CACHED_TOKENS = 50_000_000

# The evaluation: what the validator scores and against what.
METRICS = skipgram_eval.METRICS
eval_fn = skipgram_eval.eval_fn
references_fn = skipgram_eval.references_fn
floors_fn = skipgram_eval.floors_fn
details_fn = skipgram_eval.details_fn


def embedding_spec(ctx):
  """The trainer's `embedding_spec` setting, or the default table's."""
  text = getattr(ctx.settings, 'embedding_spec', '') or ''
  from tpu_embeddings.spec.embedding_spec import EmbeddingSpec
  spec = EmbeddingSpec.from_json(text) if text.strip() else default_spec()
  skipgram_tables(spec)
  return spec


def _with_eval(ctx) -> list:
  """The Examples of the run that have an eval split."""
  return [uri for uri in ctx.examples_uris if tf.io.gfile.glob(
      f'{uri.rstrip("/")}/Split-{EVAL_SPLIT}/*')]


def _data(ctx) -> skipgram.SkipGramData:
  """The pair sampler of the run (built once per ctx: its tables are big)."""
  if 'skipgram_data' not in ctx.cache:
    vocabulary = ctx.vocabulary('')
    ctx.cache['skipgram_data'] = skipgram.SkipGramData(
        vocabulary.tokens, vocabulary.counts, ctx.settings)
  return ctx.cache['skipgram_data']


def _batches(ctx) -> skipgram_input.SkipGramBatches:
  if 'skipgram_batches' not in ctx.cache:
    ctx.cache['skipgram_batches'] = skipgram_input.SkipGramBatches(_data(ctx))
  return ctx.cache['skipgram_batches']


@tf.autograph.experimental.do_not_convert
def _no_extras(ids):
  return ids, {}


def input_fn(ctx, epochs: int,
             input_context: Optional[tf.distribute.InputContext] = None
             ) -> tf.data.Dataset:
  """(ids, no extras) batches of `epochs` passes over the train split:
  `SkipGramData.batches`, made by `SkipGramBatches` (blocks of records, the
  pair ops where they load, ids kept in memory between passes when they fit
  `CACHED_TOKENS`; batch i is the same either way). With `input_context`,
  that input pipeline's share: its records' pairs, in batches of its share
  of the global batch."""
  made = _batches(ctx)
  cache = epochs != 1 and sum(ctx.vocabulary('').counts) <= CACHED_TOKENS
  return made.batches(
      made.id_sequences(ctx.examples_uris, TRAIN_SPLIT, cache=cache,
                        input_context=input_context),
      epochs=epochs, input_context=input_context).map(_no_extras)


def negative_weight(ctx) -> float:
  """The weight of the negatives' loss terms (K/S with shared negatives),
  from the trainer's settings; 1 without them."""
  settings = ctx.settings
  return settings.negative_weight if settings is not None else 1.0


def loss_fn(model, activations, extras, ctx, training):
  del model, extras, training  # no dense model; the same loss either way
  return skipgram_loss.loss(activations[TARGET_FEATURE],
                            activations[CONTEXT_FEATURE],
                            activations[NEGATIVES_FEATURE],
                            ctx.global_batch_size, negative_weight(ctx))


def activation_gradients(activations, ctx):
  """(loss, {feature: d loss / d activations}), derived by hand."""
  return skipgram_loss.loss_and_gradients(
      activations[TARGET_FEATURE], activations[CONTEXT_FEATURE],
      activations[NEGATIVES_FEATURE], ctx.global_batch_size,
      negative_weight(ctx))


def heldout_pairs(ctx) -> Optional[heldout.EvalPairs]:
  """The held-out sample (`heldout.read_pairs` of the first
  `EVAL_SEQUENCES` eval sequences, the validator's default sample) of the
  Examples that have an eval split; None when none has one. Read once."""
  if 'heldout_pairs' not in ctx.cache:
    present = _with_eval(ctx)
    vocabulary = ctx.vocabulary('')
    ctx.cache['heldout_pairs'] = heldout.read_pairs(
        present, vocabulary.tokens, vocabulary.counts, ctx.settings,
        EVAL_SEQUENCES, ctx.seed, data=_data(ctx)) if present else None
  return ctx.cache['heldout_pairs']


def _no_pairs(uris: Sequence[str], split: str, config) -> ValueError:
  return ValueError(
      f'examples {", ".join(uris)}: split {split!r} gives no skip-gram pairs: '
      'it is empty, or no sequence keeps two in-vocabulary tokens after '
      f'subsampling (subsample={config.subsample}, window={config.window}); '
      'use more varied data or a lower subsample')


def check_input(ctx):
  """The train split, and the eval sample the validator scores on (where
  there is an eval split), must give pairs: else training never ends or the
  model is trained only to be refused."""
  config = _data(ctx).config
  made = _batches(ctx)
  if not made.yields_pairs(made.id_sequences(ctx.examples_uris, TRAIN_SPLIT)):
    raise _no_pairs(ctx.examples_uris, TRAIN_SPLIT, config)
  pairs = heldout_pairs(ctx)
  if pairs is not None and not pairs.targets.size:
    raise _no_pairs(_with_eval(ctx), EVAL_SPLIT, config)


def examples_per_epoch(ctx) -> float:
  """Expected (target, context) pairs of one pass over the train split."""
  return _batches(ctx).pairs_per_epoch(ctx.examples_uris, TRAIN_SPLIT)


def exported_table(spec):
  """(table, vocabulary) the exports serve as text embeddings: the input
  table (read by `target`; row i = token i of the single vocabulary).

  An optional capability of the model contract that any module may declare
  (tpu_embeddings/exports/table_source.py): the table is exported streamed,
  held once, with sentence tokenization and `lookup` and `neighbors`
  signatures.
  """
  from tpu_embeddings.artifacts.vocabularies import SINGLE
  return skipgram_tables(spec)[0], SINGLE
