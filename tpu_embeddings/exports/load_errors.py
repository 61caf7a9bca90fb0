"""What a failed load check raises, and the line of an error that says why.
"""

_TRACE_PREFIXES = ('Graph execution error', 'Detected at node', 'File "',
                   'Node:', '[[', 'Original stack trace')


class LoadCheckError(RuntimeError):
  """An export failed to load or to answer its canary inputs."""


def reason(e: Exception) -> str:
  """The line of an error that says what went wrong (TF's graph errors start
  with a header and the Python stack of the failing op)."""
  lines = [l.strip() for l in str(e).splitlines() if l.strip()]
  reasons = [l for l in lines
             if not l.startswith(_TRACE_PREFIXES) and not l.endswith(':')]
  return (reasons or lines or [''])[0]
