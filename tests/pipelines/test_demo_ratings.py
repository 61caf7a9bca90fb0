"""Generated ratings: integer ids, stars 1-5 written as floats, the last
ratings in time held out, one pre-split span folder each."""

import csv

import numpy as np

from pipelines import demo_ratings
from pipelines.cli.main import main

SMALL = demo_ratings.Shape(users=30, items=20, ratings=500)


def _read(path):
  with open(path, encoding='utf-8', newline='') as f:
    return list(csv.reader(f))


def test_ratings_are_stars_of_known_ids_and_depend_on_the_seed():
  rows = demo_ratings.ratings(SMALL)
  assert rows.shape == (500, 4)
  assert rows[:, 0].min() >= 1 and rows[:, 0].max() <= 30
  assert rows[:, 1].min() >= 1 and rows[:, 1].max() <= 20
  assert set(np.unique(rows[:, 2])) <= {1, 2, 3, 4, 5}
  np.testing.assert_array_equal(rows, demo_ratings.ratings(SMALL))
  other = demo_ratings.Shape(users=30, items=20, ratings=500, seed=1)
  assert not np.array_equal(rows, demo_ratings.ratings(other))


def test_the_eval_split_holds_the_last_ratings_in_time():
  rows = np.array([[1, 1, 3, 30], [2, 1, 4, 10], [1, 2, 5, 20],
                   [2, 2, 1, 40]])
  split = demo_ratings.time_split(rows, 0.25)
  assert split['train'][:, 3].tolist() == [10, 20, 30]
  assert split['eval'][:, 3].tolist() == [40]


def test_a_span_is_pre_split_csv_with_integer_ids_and_float_ratings(
    tmp_path):
  written = demo_ratings.write_examples(str(tmp_path), SMALL, span=3)
  assert written['train'] == str(tmp_path / 'span-3/train/part-00000.csv')
  train, held = _read(written['train']), _read(written['eval'])
  assert train[0] == held[0] == ['user_id', 'item_id', 'rating']
  assert len(train) - 1 == 450 and len(held) - 1 == 50
  for user, item, rating in train[1:] + held[1:]:
    assert user.isdigit() and item.isdigit()
    assert rating in {'1.0', '2.0', '3.0', '4.0', '5.0'}


def test_demo_data_ratings_writes_the_spans_asked_for(tmp_path, capsys):
  assert main(['demo-data', '--ratings', '--out', str(tmp_path),
               '--spans', '1', '--first-span', '2']) == 0
  assert 'wrote span 2: train ' in capsys.readouterr().out
  assert sorted(p.name for p in tmp_path.iterdir()) == ['span-2']
  assert len(_read(tmp_path / 'span-2/eval/part-00000.csv')) == 3001
