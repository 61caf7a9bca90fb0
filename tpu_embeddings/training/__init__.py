"""Training embedding tables: the TPU and CPU adapters, the fused step, the
embedding optimizers, checkpoints and the loop; no TFX."""
