"""real_corpora on a text file of one's own, judged on a similarity set."""

import collections
import os
import re
import subprocess
import sys

import pytest

from benchmarks import gensim_side
from benchmarks import run_arguments
from tests.support import paths
from tests.support import tiny_inputs


def test_a_text_must_be_named_and_exist(tmp_path):
  with pytest.raises(ValueError, match='expected NAME=PATH'):
    run_arguments.named_files([str(tmp_path / 'a.txt')], '--text')
  with pytest.raises(ValueError, match='no file'):
    run_arguments.named_files([f'a={tmp_path}/missing.txt'], '--text')


def test_a_similarity_folder_needs_tsv_or_txt_files(tmp_path):
  (tmp_path / 'notes.csv').write_text('a\tb\t1\n')
  with pytest.raises(ValueError, match='no NAME.tsv or NAME.txt files'):
    gensim_side.similarity_files(str(tmp_path))
  (tmp_path / 'men.tsv').write_text('a\tb\t1\n')
  (tmp_path / 'EN-RW.txt').write_text('c\td\t2\r\n')
  assert gensim_side.similarity_files(str(tmp_path)) == {
      'men': str(tmp_path / 'men.tsv'), 'EN-RW': str(tmp_path / 'EN-RW.txt')}
  (tmp_path / 'men.txt').write_text('a\tb\t1\n')
  with pytest.raises(ValueError, match='both men.tsv and men.txt'):
    gensim_side.similarity_files(str(tmp_path))


@pytest.mark.slow
def test_a_text_file_is_judged_on_each_similarity_set(tmp_path):
  text = tmp_path / 'stories.txt'
  stories = tiny_inputs.lee_stories(text)
  sets = tmp_path / 'sets'
  sets.mkdir()
  # Pairs of words the stories hold often, scored so the set ranks them.
  counts = collections.Counter(w for s in stories for w in s)
  words = sorted(w for w, n in counts.items() if n >= 10 and len(w) > 3)
  (sets / 'mine.tsv').write_text(''.join(
      f'{a}\t{b}\t{i % 7}\n' for i, (a, b) in
      enumerate(zip(words, reversed(words)))))
  done = subprocess.run(
      [sys.executable, '-m', 'benchmarks.real_corpora', '--corpora', '',
       '--text', f'stories={text}', '--similarity', str(sets),
       '--seeds', '2', '--work', str(tmp_path / 'work')],
      cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=paths.REPO),
      capture_output=True, text=True, timeout=900, check=False)
  assert done.returncode == 0, done.stderr[-3000:]
  assert re.search(r'side .* wordsim +mine +analogy', done.stdout), done.stdout
  for side in ('pipeline', 'gensim'):
    assert re.search(rf'\n{side} +(yes|NO|1/2) +\d+\.\d+', done.stdout), (
        done.stdout)
  assert 'median of 2 seeds' in done.stdout
  assert os.path.isdir(tmp_path / 'work' / 'home-stories-seed-1')
