"""topic_corpus writes a data root whose lines each keep to one topic."""

import glob
import os

from benchmarks import topic_corpus


def test_the_command_writes_one_topic_per_line_within_the_vocabulary(
    tmp_path, capsys):
  out = tmp_path / 'data'
  topic_corpus.main(['--out', str(out), '--rows', '50', '--tokens', '3000',
                     '--topics', '4'])
  assert capsys.readouterr().out.strip() == os.path.join(str(out), 'span-1')
  files = glob.glob(str(out / 'span-1' / 'corpus-*.txt'))
  assert len(files) == 1
  with open(files[0]) as f:
    lines = [line.split() for line in f]
  tokens = [t for line in lines for t in line]
  # Lines are drawn whole until the count reaches --tokens.
  assert 3000 <= len(tokens) < 3000 + topic_corpus.MAX_LENGTH
  assert all(len({topic_corpus.topic_of(t) for t in line}) == 1
             for line in lines if line)
  # 50 rows over 4 topics: 13 tokens in topics 0 and 1, 12 in 2 and 3.
  vocabulary = ({f't{t}-{j}' for t in (0, 1) for j in range(13)} |
                {f't{t}-{j}' for t in (2, 3) for j in range(12)})
  assert len(vocabulary) == 50
  assert set(tokens) <= vocabulary
