"""tensorlib.amp: mixed precision, as PyTorch's ``torch.amp``.

``autocast`` (the ops' precision policy, :mod:`tensorlib.engine.autocast`, also
``tensorlib.autocast``) and ``GradScaler`` (dynamic loss scaling for float16 gradients,
:mod:`tensorlib.amp.grad_scaler`). Built in notebook 19a (number formats and mixed precision).
"""

from tensorlib.amp.grad_scaler import GradScaler
from tensorlib.engine.autocast import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["GradScaler", "autocast", "get_autocast_dtype", "is_autocast_enabled"]
