"""Skip-gram's evaluation: the validation hooks of the built-in model.

What the validator (tpu_embeddings/validation) calls for every model, here
for skip-gram's tables: METRICS and `eval_fn` score one model's `tokens`
table (rows `serve.rows`: the candidate's restored table, the pushed
baseline's as its `lookup` signature serves it); `references_fn` gives the
models a table must beat: the best model knowing only token counts (its
held-out loss), the popularity ranking (its recall@k) and an untrained
table; `floors_fn` which of them each metric must beat; `details_fn`
recall@k by frequency of the target, the eval data and a warning on a
baseline that knows little of the evaluation vocabulary.

By default a healthy table must have a held-out skip-gram loss below the
frequency-only model's (`tpu_embeddings.models.frequency_model`): an
untrained, collapsed or diverged table cannot be below it, and word2vec
tables on real text are. Tied vectors (no contexts table) score a token
against itself, so their held-out loss stays near an untrained table's even
when their neighbours are good: they must beat the popularity ranking
instead. Beating the popularity ranking is optional for two tables
(`beat_popularity`): on text, frequent context words make that ranking
unbeatable even for good vectors.

The validator's settings come in `ctx.evaluation` (its ValidatorConfig).
"""

from typing import Any, Dict, List, Mapping, Optional

from tpu_embeddings.models import served as served_lib
from tpu_embeddings.models import skipgram_eval_data as eval_data
from tpu_embeddings.models.skipgram_features import skipgram_tables
from tpu_embeddings.quality import inspection
from tpu_embeddings.spec.embedding_spec import EmbeddingSpec

METRICS = {
    'eval_loss': 'lower',
    'recall_at_k': 'higher',
    'spearman': 'higher',
    'related_recall_at_k': 'higher',
    'analogy_accuracy': 'higher',
}


def _settings(ctx):
  if ctx.evaluation is None:
    raise ValueError('skip-gram evaluation needs the validator\'s settings '
                     '(ctx.evaluation)')
  return ctx.evaluation


def _spec(ctx) -> EmbeddingSpec:
  if 'skipgram_eval_spec' not in ctx.cache:
    ctx.cache['skipgram_eval_spec'] = EmbeddingSpec.load(ctx.model_uri)
  return ctx.cache['skipgram_eval_spec']


def _data(ctx) -> eval_data.EvalData:
  """The eval pairs and files of the run (read once per ctx)."""
  if 'skipgram_eval_data' not in ctx.cache:
    ctx.cache['skipgram_eval_data'] = eval_data.load(
        ctx.examples_uris, ctx.vocabulary(''), _settings(ctx),
        eval_data.trained_skipgram(ctx.model_uri))
  return ctx.cache['skipgram_eval_data']


def _two_tables(spec: EmbeddingSpec) -> bool:
  table, output = skipgram_tables(spec)
  return table != output


def loss_not_comparable(candidate_two_tables: bool,
                        source: Optional[EmbeddingSpec]) -> str:
  """Why the held-out losses of the candidate and a pushed version trained
  with spec `source` (None: unknown) cannot be compared ('' when they can).

  A served version holds only its input table, so its loss is scored with
  tied vectors: the loss of the model it came from only if that model was
  tied too.
  """
  if candidate_two_tables:
    return ('the candidate scores pairs with a contexts table, the pushed '
            'version holds only its tokens table')
  if source is None:
    return ('the pushed version\'s source model, which says how it scored '
            'pairs, cannot be read')
  if len(source.tables) == 1:
    return ''
  return 'the pushed version was trained with a contexts table it does not hold'


def eval_fn(serve: served_lib.Served, ctx) -> Dict[str, Any]:
  """The skip-gram metrics of one model's `tokens` table (and its contexts
  table, which only the held-out loss reads)."""
  data, k = _data(ctx), _settings(ctx).k
  table, output = skipgram_tables(_spec(ctx))
  rows = serve.rows(table)
  if rows is None:
    raise ValueError(f'it serves no rows of table {table!r}')
  two_tables = output != table
  hits = eval_data.recall_hits(rows, data, k)
  serve.cache['recall_hits'] = hits
  found = eval_data.quality(
      rows, data, k, serve.rows(output) if two_tables else None, hits)
  serve.cache['coverage'] = found['eval_vocabulary_coverage']
  if serve.role == served_lib.BASELINE:
    why = loss_not_comparable(two_tables, serve.spec)
    if why:
      found['eval_loss'] = None
      serve.not_comparable['eval_loss'] = why
  return {**{m: None for m in METRICS}, **found}


def references_fn(ctx) -> Dict[str, Dict[str, Any]]:
  """The frequency-only model, the popularity ranking, an untrained table."""
  data = _data(ctx)
  skipgram = eval_data.trained_skipgram(ctx.model_uri)
  return {
      'frequency': {
          'label': 'frequency-only model',
          'failure': 'the table predicts held-out contexts no better than '
                     'token counts do',
          'metrics': eval_data.frequency(data, skipgram)},
      'popularity': {
          'label': 'popularity ranking',
          'failure': 'no better than ranking tokens by frequency',
          'metrics': eval_data.popularity(data, _settings(ctx).k)},
      served_lib.UNTRAINED: {
          'label': 'untrained table',
          'failure': 'no better than an untrained table',
          'metrics': {'eval_loss': skipgram.untrained_loss()}},
  }


def floors_fn(ctx) -> Dict[str, List[str]]:
  """Two tables: the held-out loss below the frequency-only model's; tied
  vectors (or `beat_popularity`): recall@k above the popularity ranking's."""
  settings, two_tables = _settings(ctx), _two_tables(_spec(ctx))
  floors = {}
  if settings.beat_frequency_model and two_tables:
    floors['eval_loss'] = ['frequency']
  if settings.beat_popularity or (settings.beat_frequency_model and
                                  not two_tables):
    floors['recall_at_k'] = ['popularity']
  return floors


def _by_frequency(serves: Mapping[str, served_lib.Served], ctx
                  ) -> Dict[str, Any]:
  data, k = _data(ctx), _settings(ctx).k
  table = skipgram_tables(_spec(ctx))[0]
  tables = {role: s.rows(table) for role, s in serves.items()
            if role != served_lib.UNTRAINED and s.rows(table) is not None}
  p = data.pairs
  rows = inspection.by_frequency(
      tables, p.targets[data.recall_rows], p.contexts[data.recall_rows], k,
      {role: serves[role].cache.get('recall_hits') for role in tables})
  roles = list(tables) + ['popularity']
  return {'title': 'Held-out recall@k by frequency',
          'note': f'recall@{k} of the held-out pairs by the frequency third '
                  'of their target (popularity: ranking tokens by count)',
          'columns': ['target frequency', 'pairs'] + roles,
          'rows': [[r['bucket'], r['pairs']] + [r.get(x) for x in roles]
                   for r in rows]}


def _coverage_warning(serves, ctx) -> List[str]:
  baseline = serves.get(served_lib.BASELINE)
  coverage = (baseline.cache.get('coverage') if baseline is not None
              else None)
  limit = _settings(ctx).min_baseline_coverage
  if coverage is None or coverage >= limit:
    return []
  return [f'{baseline.label} knows only {coverage:.1%} of the evaluation '
          f'vocabulary (min_baseline_coverage {limit:g}): comparing with it '
          'says little']


def details_fn(serves: Mapping[str, served_lib.Served], ctx
               ) -> Dict[str, Any]:
  """The skip-gram settings scored with, the eval data, recall@k by
  frequency, a warning on a baseline that knows little of the vocabulary."""
  data = _data(ctx)
  skipgram = eval_data.trained_skipgram(ctx.model_uri)
  p = data.pairs
  return {
      'parameters': {'window': skipgram.window,
                     'num_negatives': skipgram.negatives,
                     'subsample': skipgram.subsample},
      'eval_data': {'vocabulary_size': len(data.tokens),
                    'sequences': p.sequences, 'oov_tokens_dropped':
                    p.oov_tokens, 'pairs': int(p.targets.size),
                    'recall_queries': int(data.recall_rows.size)},
      'sections': [_by_frequency(serves, ctx)],
      'warnings': _coverage_warning(serves, ctx),
  }
