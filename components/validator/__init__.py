"""CheckpointValidator: restores a trained table on CPU, checks it, blesses it.
"""
