"""EmbeddingExporter: a serving SavedModel and a TF1 Hub module from one
checkpoint."""
