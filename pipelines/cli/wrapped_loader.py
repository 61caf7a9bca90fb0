"""A module loader that stands in for another during a module's first
execution, and then hands the module back to it."""

import importlib.abc


class WrappedLoader(importlib.abc.Loader):
  """Creates modules as `loader` does; a subclass's `exec_module` changes how
  the module first runs, after `hand_back` made `loader` the module's own
  (for reloads, `importlib.resources` and anything reading `__loader__`)."""

  def __init__(self, loader):
    self.loader = loader

  def create_module(self, spec):
    return self.loader.create_module(spec)

  def hand_back(self, module):
    module.__loader__ = self.loader
    module.__spec__.loader = self.loader
