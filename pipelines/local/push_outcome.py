"""What the run's pusher did, as the run summary tells it.

A pusher whose inputs are unchanged since an earlier run is cached: it
publishes nothing, and its output artifacts are the earlier run's, whose
`pushed_version` names that run's push. After a rollback that version is
not even served any more. The summary of a cached pusher therefore says
that there was nothing new to push and which version is served now, and
never replays the earlier push. A pusher that ran and found its exports'
model already served (components/pusher/executor.py) says which version
serves it.
"""

import os
from typing import Any, Dict, List, Mapping

from components import keys
from pipelines.local import metadata_queries
from tpu_embeddings.push_root import status as push_status


def read(outputs: Mapping[str, metadata_queries.Output],
         push_root: str) -> Dict[str, Any]:
  """The summary's push fields from the pusher's outputs of this run:
  `pushed`, `pushed_version` and `pushed_destinations` of a push this run
  made; with a cached pusher, `pushed` false and `served_version`."""
  cp = metadata_queries.custom_property
  if all(o.cached for o in outputs.values()):
    served = (push_status.served_version(push_root)
              if os.path.isdir(push_root) else None)
    return {'pushed': False, 'pushed_version': None, 'pusher_cached': True,
            'served_version': served}
  first = next(iter(outputs.values())).artifact
  already = cp(first, keys.ALREADY_SERVED)
  if already:
    return {'pushed': False, 'pushed_version': None,
            'already_served_version': int(already)}
  return {
      'pushed': bool(cp(first, keys.PUSHED)),
      'pushed_version': cp(first, keys.PUSHED_VERSION),
      'pushed_destinations': {
          k: cp(o.artifact, keys.PUSHED_DESTINATION)
          for k, o in outputs.items()},
  }


def lines(summary: Mapping[str, Any]) -> List[str]:
  """The summary's `pushed:` lines."""
  if summary.get('pushed'):
    return [f'pushed: version {summary.get("pushed_version")}'] + [
        f'  {k}: {v}' for k, v in
        sorted((summary.get('pushed_destinations') or {}).items())]
  if summary.get('already_served_version') is not None:
    return [f'pushed: nothing new to push (version '
            f'{summary["already_served_version"]} already serves this model)']
  if summary.get('pusher_cached') and summary.get('blessed'):
    served = summary.get('served_version')
    return ['pushed: nothing new to push (' + (
        f'version {served} is served)' if served is not None else
        'no version is served)')]
  return ['pushed: nothing (model not blessed)']
