"""Embedding tables trained with TensorFlow's TPU embedding API: the library.

Layers, each importing only those below it: `core` (settings, files, text),
`spec` (the embedding spec), `artifacts` (one reader/writer per artifact),
`models` (the models trained on the tables) and `push_root` (published
versions and the consumer API), then `training` and `exports` (a Model
written as each export kind of `artifacts.export_kinds`, load-checked).
TensorFlow only: no TFX.

The consumer API, for services and notebooks that use what was pushed:

    import tpu_embeddings
    version = tpu_embeddings.latest_version('gs://bucket/embeddings')
    version, vectors = tpu_embeddings.embed(root, ['the cat sat'])
    version, rows = tpu_embeddings.neighbors(root, 'cat', k=10)
"""

from tpu_embeddings.push_root.consumer import PushedVersion
from tpu_embeddings.push_root.consumer import embed
from tpu_embeddings.push_root.consumer import latest_version
from tpu_embeddings.push_root.consumer import list_pushed
from tpu_embeddings.push_root.consumer import load_serving
from tpu_embeddings.push_root.consumer import neighbors
from tpu_embeddings.push_root.consumer import rollback
from tpu_embeddings.push_root.consumer import unknown_tokens
from tpu_embeddings.push_root.consumer import version_dirs

__all__ = ['PushedVersion', 'embed', 'latest_version', 'list_pushed',
           'load_serving', 'neighbors', 'rollback', 'unknown_tokens',
           'version_dirs']
