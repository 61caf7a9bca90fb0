"""The self-test's options and their defaults; importable without
TensorFlow, so a command line checks them first."""

DEFAULT_STEPS = 50
MAX_STEPS = 100_000
# Tokens of each synthetic vocabulary.
DEFAULT_VOCABULARY_SIZE = 1000

# Perturbations of the reference, each a check that the comparison fails:
# row 0 of the first table, row 0 of its first optimizer slot, or the
# learning rate of the middle step.
ROW, SLOT, LEARNING_RATE = 'row', 'slot', 'learning-rate'
PERTURBATIONS = (ROW, SLOT, LEARNING_RATE)
