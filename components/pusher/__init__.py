"""EmbeddingPusher: publishes the blessed serving model and Hub module."""
