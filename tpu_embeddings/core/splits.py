"""The splits of an Examples artifact, by name: training reads the train
split, held-out scores (the validator's, the trainer's TensorBoard) the eval
split. Plain strings, importable without TensorFlow."""

TRAIN_SPLIT = 'train'
EVAL_SPLIT = 'eval'
