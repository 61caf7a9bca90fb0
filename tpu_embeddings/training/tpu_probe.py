"""Asks a grpc:// TPU address what it is, in a child process.

TensorFlow's own gRPC client aborts the whole process (`completion_queue.cc
assertion failed`, rc 134) when the address answers with something other
than a TensorFlow worker, such as a plain HTTP server. So before TF touches
the address, a child process sends the worker's `GetStatus` RPC with the
plain `grpc` package and prints the device types it lists, as one JSON line.
Whatever happens there (an RPC error, a timeout, a crash by a signal) comes
back as a `ProbeResult` with a one-line `error`.

Run as a script: `python tpu_probe.py host:port` (imports only grpc).
"""

import dataclasses
import json
import signal
import subprocess
import sys
from typing import List, Optional

RPC_TIMEOUT_SECONDS = 10.0
# Child start-up (importing grpc) comes on top of the RPC deadline.
_PROCESS_GRACE_SECONDS = 20.0
_GET_STATUS = '/tensorflow.WorkerService/GetStatus'


@dataclasses.dataclass(frozen=True)
class ProbeResult:
  """The device types the worker lists, or why there is no answer."""
  device_types: List[str]
  error: Optional[str] = None


def _varint(data: bytes, i: int):
  value, shift = 0, 0
  while True:
    byte = data[i]
    i += 1
    value |= (byte & 0x7f) << shift
    shift += 7
    if not byte & 0x80:
      return value, i


def _fields(data: bytes):
  """(field number, value) of a protobuf message; values of wire type 2 only."""
  i = 0
  while i < len(data):
    key, i = _varint(data, i)
    wire_type = key & 7
    if wire_type == 0:
      _, i = _varint(data, i)
    elif wire_type == 1:
      i += 8
    elif wire_type == 5:
      i += 4
    elif wire_type == 2:
      length, i = _varint(data, i)
      if i + length > len(data):
        raise ValueError('truncated field')
      yield key >> 3, data[i:i + length]
      i += length
    else:
      raise ValueError(f'wire type {wire_type}')


def device_types(get_status_response: bytes) -> List[str]:
  """GetStatusResponse.device_attributes[*].device_type, in order, unique.

  worker.proto: GetStatusResponse { repeated DeviceAttributes
  device_attributes = 1; }, DeviceAttributes { string name = 1;
  string device_type = 2; ... }.
  """
  types = []
  for number, attributes in _fields(get_status_response):
    if number != 1:
      continue
    for inner, value in _fields(attributes):
      if inner == 2 and value.decode('utf-8') not in types:
        types.append(value.decode('utf-8'))
  return types


def probe_here(endpoint: str, timeout: float = RPC_TIMEOUT_SECONDS
              ) -> ProbeResult:
  """The GetStatus RPC in this process (the child's side of `probe`)."""
  import grpc
  with grpc.insecure_channel(endpoint) as channel:
    get_status = channel.unary_unary(_GET_STATUS)
    try:
      response = get_status(b'', timeout=timeout)
    except grpc.RpcError as e:
      if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
        return ProbeResult([], f'no answer within {timeout:g}s')
      # "failed to connect to all addresses; last error: ...: <reason>"
      details = ' '.join(str(e.details() or '').split()).rsplit(': ', 1)[-1]
      return ProbeResult([], f'gRPC {e.code().name}: {details}')
  try:
    return ProbeResult(device_types(response))
  except (ValueError, IndexError, UnicodeDecodeError) as e:
    return ProbeResult([], f'the GetStatus answer does not parse ({e})')


def _probe_command(endpoint: str) -> List[str]:
  # -I: no script directory on sys.path, so nothing here shadows a module.
  return [sys.executable, '-I', __file__, endpoint, str(RPC_TIMEOUT_SECONDS)]


def _signal_name(number: int) -> str:
  try:
    return signal.Signals(number).name
  except ValueError:
    return f'signal {number}'


def probe(endpoint: str) -> ProbeResult:
  """Runs `probe_here` in a child process; never raises for the endpoint."""
  timeout = RPC_TIMEOUT_SECONDS + _PROCESS_GRACE_SECONDS
  try:
    done = subprocess.run(_probe_command(endpoint), capture_output=True,
                          text=True, timeout=timeout, check=False)
  except subprocess.TimeoutExpired:
    return ProbeResult([], f'no answer within {timeout:g}s')
  if done.returncode < 0:
    return ProbeResult([], 'the gRPC client died by '
                       f'{_signal_name(-done.returncode)}')
  lines = done.stdout.strip().splitlines()
  try:
    seen = json.loads(lines[-1])
    return ProbeResult(list(seen['device_types']), seen.get('error'))
  except (IndexError, ValueError, KeyError, TypeError):
    last = (done.stderr.strip().splitlines() or ['no output'])[-1]
    return ProbeResult([], f'the probe failed (rc {done.returncode}: '
                       f'{last.strip()})')


def main(argv: List[str]) -> int:
  endpoint = argv[1]
  timeout = float(argv[2]) if len(argv) > 2 else RPC_TIMEOUT_SECONDS
  seen = probe_here(endpoint, timeout)
  print(json.dumps(dataclasses.asdict(seen)), flush=True)
  return 0


if __name__ == '__main__':
  sys.exit(main(sys.argv))
