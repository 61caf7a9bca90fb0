"""EmbeddingExporter: the TFX component over `tpu_embeddings.exports`, one
output artifact per export kind."""
