"""Peak resident memory of a command and every process it starts.

A Kubernetes pod is limited by the memory of all its processes together
(the container's cgroup): the exporter's load-check processes, for one, run
beside it. `run` starts a command and samples its whole process tree every
few milliseconds (less often when a sample costs more: SAMPLER_CPU_SHARE).
A cgroup charges each page once, so the tree's memory is taken as the
anonymous (and shared-memory) resident pages of every process,
proportionally (`Pss_Anon`: a page a fork shares is counted once), plus the
file-backed resident pages of the process with the most of them: the
processes of one component map the same libraries (TensorFlow's alone are
about 0.4 GiB), which a plain sum would count once per process.
The command's own `ru_maxrss` (exact, from the kernel, its file pages
included, and its children's if larger) is kept too: a spike shorter than
the sampling period can be missed by the samples, never by `ru_maxrss`.
The peak reported is the larger of the two. The kernel starts a child's
`ru_maxrss` from the resident memory of the process that forked it, so run
commands from a small process (no TensorFlow imported).
"""

import dataclasses
import os
import resource
import subprocess
import threading
import time
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

SAMPLE_SECONDS = 0.01
# A sample of a process holding TensorFlow takes several ms of CPU (the
# kernel walks its page tables for smaps_rollup): the sampler waits long
# enough between samples to take at most this share of one core, rather
# than most of one of the cores the measured command runs on.
SAMPLER_CPU_SHARE = 0.1


@dataclasses.dataclass(frozen=True)
class Measured:
  """What `run` saw: seconds, peak bytes, and the command's output."""
  seconds: float
  peak_bytes: int        # max(sampled tree sum, the command's ru_maxrss)
  tree_peak_bytes: int   # largest sampled sum over the process tree
  own_peak_bytes: int    # the command's own ru_maxrss
  returncode: int
  stdout: str
  stderr: str


def _children() -> Dict[int, List[int]]:
  """{parent pid: [child pids]} of every process on the machine."""
  tree: Dict[int, List[int]] = {}
  for name in os.listdir('/proc'):
    if not name.isdigit():
      continue
    try:
      with open(f'/proc/{name}/stat', 'rb') as f:
        stat = f.read()
    except OSError:
      continue
    # The command name, in parentheses, may hold spaces.
    ppid = int(stat[stat.rindex(b')') + 2:].split()[1])
    tree.setdefault(ppid, []).append(int(name))
  return tree


def _resident(pid: int) -> Tuple[int, int]:
  """(anonymous + shared-memory, file-backed) resident bytes of `pid`; the
  first proportional (a page shared by processes of the tree, as right
  after a fork, is counted once over them)."""
  found = {}
  for name, keys in (('smaps_rollup', (b'Pss_Anon:', b'Pss_Shmem:')),
                     ('status', (b'RssFile:',))):
    try:
      with open(f'/proc/{pid}/{name}', 'rb') as f:
        for line in f:
          if line.startswith(keys):
            key, value = line.split(b':')
            found[key] = int(value.split()[0]) * 1024
    except OSError:
      pass
  return (found.get(b'Pss_Anon', 0) + found.get(b'Pss_Shmem', 0),
          found.get(b'RssFile', 0))


def tree_rss(pid: int) -> int:
  """Resident bytes of `pid` and all its descendants now, as a cgroup
  charges them (module docstring)."""
  tree = _children()
  anon, files, todo = 0, 0, [pid]
  while todo:
    p = todo.pop()
    a, f = _resident(p)
    anon, files = anon + a, max(files, f)
    todo += tree.get(p, [])
  return anon + files


def run(argv: Sequence[str], env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None) -> Measured:
  """Runs `argv` to its end; its wall seconds and peak memory."""
  start = time.perf_counter()
  proc = subprocess.Popen(list(argv), env=None if env is None else dict(env),
                          cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
  peak = [0]
  done = threading.Event()

  def sample():
    while not done.is_set():
      began = time.thread_time()
      peak[0] = max(peak[0], tree_rss(proc.pid))
      cost = time.thread_time() - began
      done.wait(max(SAMPLE_SECONDS, cost * (1 / SAMPLER_CPU_SHARE - 1)))

  sampler = threading.Thread(target=sample, daemon=True)
  sampler.start()
  out: Dict[str, bytes] = {}
  readers = [threading.Thread(target=lambda k=k, s=s: out.__setitem__(
      k, s.read()), daemon=True)
             for k, s in (('stdout', proc.stdout), ('stderr', proc.stderr))]
  for r in readers:
    r.start()
  _, status, usage = os.wait4(proc.pid, 0)
  seconds = time.perf_counter() - start
  done.set()
  sampler.join()
  for r in readers:
    r.join()
  proc.returncode = os.waitstatus_to_exitcode(status)
  own = usage.ru_maxrss * 1024
  return Measured(seconds, max(own, peak[0]), peak[0], own, proc.returncode,
                  out.get('stdout', b'').decode('utf-8', 'replace'),
                  out.get('stderr', b'').decode('utf-8', 'replace'))


def self_peak_bytes() -> int:
  """This process's own peak resident bytes so far."""
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
