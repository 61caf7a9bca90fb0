"""The TPU self-test: the TPU trainer against the CPU trainer, from the same
start on the same batches, checkpoints and losses compared (runner.py)."""
