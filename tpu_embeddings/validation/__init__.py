"""Validation of a trained Model: one `validate()` for every model.

`validate.validate` restores the Model on CPU, gates the health of every
table and of the dense variables, scores the metrics the model's module
declares against its references and the pushed baseline, and returns the
report data. Importing this package imports no TensorFlow (the pipeline's
settings import `config`).
"""
