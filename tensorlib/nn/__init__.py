"""tensorlib.nn: modules, parameters, the splitmix64 RNG and initialization policies."""

from tensorlib.nn import init
from tensorlib.nn.rng import Rng

__all__ = ["Rng", "init"]
