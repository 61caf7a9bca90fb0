"""Two distinguishable pairs of exports to publish, for the push root tests.

The serving model and the Hub module of scale 2.0 and of scale 3.0
(tests/support/pusher_exports.py tells them apart).
"""

import os

from tests.support import pusher_exports


def write_exports(base):
  """{scale: {'serving': dir, 'hub': dir}} for two distinguishable models."""
  out = {}
  for scale in (2.0, 3.0):
    out[scale] = {
        'serving': pusher_exports.write_serving_model(
            str(base / f'serving_{scale}'), scale),
        'hub': pusher_exports.write_hub_module(str(base / f'hub_{scale}'),
                                               scale),
    }
  return out


def numbered_dirs(root, kind):
  """The version-numbered directories under `<root>/<kind>`, sorted."""
  d = os.path.join(root, kind)
  return sorted(n for n in os.listdir(d) if n.isdigit()) if os.path.isdir(
      d) else []
