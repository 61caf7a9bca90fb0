"""A tiny demo corpus and fast settings for whole-pipeline runs."""

from pipelines import demo_data

TINY = demo_data.CorpusShape(topics=4, tokens_per_topic=12, filler_tokens=6,
                             lines_per_span=300, related_per_topic=4)
FAST = ['--set', 'train_steps=150', '--set', 'batch_size=256',
        '--set', 'dim=16', '--set', 'checkpoint_every=100',
        '--set', 'keep_versions=3',
        # The tiny eval split makes recall noisy; this test is about the
        # mechanics (the validator's gates have their own tests).
        '--set', 'regression_margin=0.5', '--neighbors', '2']
