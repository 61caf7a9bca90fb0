"""No compiled YAML, and no run's parameters, hold a value passed as a
credential: `compile`, `submit` and `schedule` refuse it in one line that
points at Kubernetes secrets and workload identity, never quoting it."""

import json

import pytest

from pipelines import pipeline as pipeline_lib
from pipelines.cli import main as cli
from pipelines.kubeflow import compile as kubeflow_compile
from pipelines.kubeflow import credentials
from pipelines.kubeflow import parameters as kubeflow_parameters
from tests.support.compiled_package import IMAGE
from tests.support.compiled_package import ROOTS
from tpu_embeddings.training.config import TrainerConfig

SECRET = 'Zx9-SECRET-VALUE-q7'

# Options Beam and its file systems take credentials by, and keys a module's
# custom_config might hold them by.
CREDENTIAL_NAMES = (
    'aws_secret_access_key', 'aws_access_key_id', 'aws_session_token',
    'azure_connection_string', 'api_key', 'apiKey', 'client_secret',
    'db_password', 'passwd', 'token', 'github_token', 'hf_token',
    'private_key_id', 'accessToken', 'credentials')
# Names that only look alike: resource names, counts and text tokens.
PLAIN_NAMES = (
    'num_workers', 'dataflow_kms_key', 'max_tokens', 'oov_token', 'pad_token',
    'max_token_length', 'tokenizer', 'sort_key', 'key_column', 'runner',
    'temp_location', 'service_account_email', 'experiments')


@pytest.mark.parametrize('name', CREDENTIAL_NAMES)
def test_credential_names(name):
  assert credentials.is_credential_name(name)


@pytest.mark.parametrize('name', PLAIN_NAMES)
def test_names_that_are_not_credentials(name):
  assert not credentials.is_credential_name(name)


def _compile(tmp_path, *extra):
  out = tmp_path / 'pipeline.yaml'
  rc = cli.main(['compile', '--output', str(out), '--image', IMAGE,
                 '--pipeline-root', ROOTS['pipeline_root']] + list(extra))
  return rc, out


REFUSED = {
    'beam option': (f'--beam-arg=--aws_secret_access_key={SECRET}',),
    'beam option, value apart': ('--beam-arg=--aws_session_token',
                                 f'--beam-arg={SECRET}'),
    'beam URL with a password': (
        f'--beam-arg=--job_endpoint=https://me:{SECRET}@runner:8099',),
    'custom_config key': (
        '--set', f'trainer.custom_config={{"api_key": "{SECRET}"}}'),
    'nested custom_config key': (
        '--set', 'trainer.custom_config={"hub": [{"password": "%s"}]}'
        % SECRET),
    'custom_config URL with a password': (
        '--set', 'trainer.custom_config={"endpoint": "https://me:%s@host"}'
        % SECRET),
    'data root URL with a password': (
        '--data-root', f'https://me:{SECRET}@host/corpus'),
}


@pytest.mark.parametrize('case', sorted(REFUSED))
def test_compile_refuses_a_credential_and_writes_nothing(tmp_path, capsys,
                                                         case):
  rc, out = _compile(tmp_path, *REFUSED[case])
  err = capsys.readouterr().err
  assert rc == 2, err
  assert len(err.splitlines()) == 1, err
  assert 'looks like a credential' in err and 'Kubernetes secret' in err
  assert 'workload identity' in err
  assert SECRET not in err
  assert not out.exists()


def test_plain_options_and_settings_still_compile(tmp_path, capsys):
  rc, out = _compile(
      tmp_path, '--beam-arg=--num_workers=4',
      '--beam-arg=--dataflow_kms_key=projects/p/keys/k',
      '--set', 'trainer.custom_config={"oov_token": "<unk>", '
      '"max_token_length": 20}')
  assert rc == 0, capsys.readouterr().err
  text = out.read_text()
  assert '--dataflow_kms_key=projects/p/keys/k' in text and 'oov_token' in text


def test_the_compile_api_refuses_too(tmp_path):
  config = pipeline_lib.PipelineConfig().replace(
      **{'trainer.custom_config': {'auth': {'bearer_token': SECRET}}})
  with pytest.raises(ValueError, match=r"custom_config\['auth'\]"
                     r"\['bearer_token'\] looks like a credential"):
    kubeflow_compile.compile_pipeline(
        str(tmp_path / 'p.yaml'), IMAGE, config=config, **ROOTS)
  with pytest.raises(ValueError, match='--beam-arg --aws_secret_access_key'):
    kubeflow_compile.compile_pipeline(
        str(tmp_path / 'p.yaml'), IMAGE,
        beam_pipeline_args=[f'--aws_secret_access_key={SECRET}'], **ROOTS)
  assert not (tmp_path / 'p.yaml').exists()


def test_a_runs_parameters_refuse_a_credential():
  declared = {'trainer_config': TrainerConfig().to_json()}
  types = {'trainer_config': 'STRING'}
  for arguments in (
      {'trainer_config.custom_config': json.dumps({'api_token': SECRET})},
      {'trainer_config': json.dumps({'custom_config': {'password': SECRET}})}):
    with pytest.raises(ValueError) as e:
      kubeflow_parameters.check_arguments(declared, types, arguments)
    assert 'looks like a credential' in str(e.value)
    assert SECRET not in str(e.value)
  assert kubeflow_parameters.check_arguments(declared, types, {
      'trainer_config.custom_config': '{"oov_token": "<unk>"}'})
