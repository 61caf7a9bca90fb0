"""No credential goes into a compiled pipeline, or into a run's parameters.

A compiled package is a plain YAML file (kept in a repository, uploaded to
Kubeflow Pipelines, shown in its UI), and each Beam argument is written into
it once per Beam task; the trainer's `custom_config` is the default of the
`trainer_config` run-time parameter, and a run's parameters are stored by
Kubeflow Pipelines and shown with the run. So `compile` refuses, in one line
and before anything is written, what looks like a credential:

  * a `--beam-arg` whose option name says secret, password, credential,
    connection string, or an access/secret/API/private/... key or token
    (`--aws_secret_access_key`, `--aws_session_token`,
    `--azure_connection_string`); `--num_workers`, `--dataflow_kms_key` (a
    key's resource name) or `--max_tokens` are not;
  * a key of `trainer.custom_config` named alike, at any depth;
  * any value holding a URL with a password (`https://user:pw@host`), in
    those, in the data, push and pipeline roots.

`submit` and `schedule` refuse the same in `--param trainer_config...`. The
pods get such values from a Kubernetes secret (as an environment variable
the library reads, e.g. AWS_SECRET_ACCESS_KEY for Beam's S3 file system) or
need none with workload identity: kubeflow/README.md, "Credentials".
Importable without TensorFlow or TFX.
"""

import re
from typing import Any, Iterable, List, Optional

# Words of a name that make it a credential on their own.
_SECRET_WORDS = frozenset((
    'secret', 'secrets', 'password', 'passwords', 'passwd', 'passphrase',
    'credential', 'credentials', 'apikey', 'privatekey', 'accesskey',
    'secretkey', 'authtoken', 'accesstoken'))
# `key` and `token` are credentials after one of these words
# (`aws_access_key_id`, `aws_session_token`): else a key is usually a name
# (`kms_key`, `sort_key`).
_QUALIFIERS = {
    'key': frozenset((
        'access', 'secret', 'api', 'private', 'account', 'client', 'session',
        'auth', 'signing', 'shared', 'storage', 'encryption', 'master')),
    'token': frozenset((
        'access', 'auth', 'api', 'session', 'sas', 'bearer', 'refresh', 'id',
        'oauth', 'security', 'secret', 'client', 'personal', 'service')),
}
# A name ending in `token` is a credential (`github_token`, `hf_token`)
# unless it names a text token (`oov_token`, `pad_token`); one with more
# words after it is a text token's setting (`max_token_length`).
_TEXT_TOKEN_WORDS = frozenset((
    'oov', 'pad', 'padding', 'unk', 'unknown', 'bos', 'eos', 'start', 'end',
    'sep', 'separator', 'mask', 'cls', 'special', 'first', 'last', 'next',
    'text', 'word', 'sentence', 'max', 'min', 'num', 'default', 'empty'))
_WORD = re.compile(r'[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+')
_URL_PASSWORD = re.compile(r'[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@', re.I)

WHERE_INSTEAD = (
    'a compiled pipeline and the runs it starts hold their values in clear; '
    'give it to the pods from a Kubernetes secret (an environment variable '
    'the library reads, e.g. AWS_SECRET_ACCESS_KEY) or use workload '
    'identity: see "Credentials" in kubeflow/README.md')


def words(name: str) -> List[str]:
  """The lower-cased words of an option or key name (`_`, `-`, `.`,
  camelCase)."""
  return [w.lower() for w in _WORD.findall(name)]


def is_credential_name(name: str) -> bool:
  """Whether an option or key name says it holds a credential."""
  found = words(name)
  if any(w in _SECRET_WORDS for w in found):
    return True
  if found and found[-1] == 'token' and (
      len(found) == 1 or found[-2] not in _TEXT_TOKEN_WORDS):
    return True
  return any(
      (w in _QUALIFIERS and i and found[i - 1] in _QUALIFIERS[w]) or
      (w == 'string' and i and found[i - 1] == 'connection')
      for i, w in enumerate(found))


def has_url_password(value: Any) -> bool:
  return isinstance(value, str) and bool(_URL_PASSWORD.search(value))


def _refused(what: str) -> ValueError:
  return ValueError(f'{what} looks like a credential; {WHERE_INSTEAD}')


def check_beam_args(args: Optional[Iterable[str]]):
  """One line naming the first Beam argument that looks like a credential
  (never its value)."""
  for arg in args or ():
    name = arg.lstrip('-').partition('=')[0] if arg.startswith('-') else ''
    if name and is_credential_name(name):
      raise _refused(f'--beam-arg {arg.partition("=")[0]}')
    if has_url_password(arg):
      raise _refused(f'--beam-arg {name or "value"} (a URL with a password)')


def _find(value: Any, path: str) -> Optional[str]:
  """Path of the first credential-looking key or value under `value`."""
  if isinstance(value, dict):
    for key, item in value.items():
      here = f'{path}[{key!r}]'
      if is_credential_name(str(key)):
        return here
      found = _find(item, here)
      if found:
        return found
  elif isinstance(value, (list, tuple)):
    for i, item in enumerate(value):
      found = _find(item, f'{path}[{i}]')
      if found:
        return found
  elif has_url_password(value):
    return f'{path} (a URL with a password)'
  return None


def check_custom_config(custom_config: Any, where: str):
  """One line naming the first key of a module's custom_config that looks
  like a credential, or the value holding a URL with a password."""
  found = _find(custom_config, where)
  if found:
    raise _refused(found)


def check_compiled(beam_args: Optional[Iterable[str]], config):
  """What `compile` writes from the user's arguments besides the roots:
  the Beam arguments and the trainer's custom_config (a PipelineConfig's)."""
  check_beam_args(beam_args)
  check_custom_config(config.trainer.custom_config, 'trainer.custom_config')


def check_uri(flag: str, value: str):
  if has_url_password(value):
    raise _refused(f'{flag} (a URL with a password)')
