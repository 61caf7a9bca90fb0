"""Bounds (low, high), both included, of the embedding spec's numbers.

The table.* settings (tpu_embeddings/training/config.py) and the vocabulary's
max_tokens use the same ones; the optimizer's are beside its defaults
(optimizer_spec.PARAM_BOUNDS).
"""

# Ten billion rows: the largest tables sharded over a TPU pod hold a few
# billion; 10^10 rows of dim 8 are already 320 GB of float32.
ROWS = (0, 10**10)
# Production tables use 8-1024 dimensions; 8192 leaves room for wide ones,
# while a row of more is 32 KB of float32 read per lookup.
DIMS = (1, 8192)
# A starting value (uniform half-width or normal stddev) beyond 10
# saturates every sigmoid; word2vec's is 0.5 / dim.
INITIALIZER_SCALES = (1e-9, 10.0)
# Ids per example of a sequence feature: lines hold at most 10,000 tokens
# (tpu_embeddings.core.text); ten times that for a module's own features.
SEQUENCE_LENGTHS = (0, 100_000)
# Each dimension of a feature's output shape is at most a batch (4M pairs,
# see SkipGramConfig.batch_size).
OUTPUT_DIMS = (1, 1 << 22)
