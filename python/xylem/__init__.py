"""xylem: tensors on any backend (native, OpenCL, CUDA).

Operations run on the backend given as ``backend=``, else on the default one
(``with backend:`` for the calling thread, ``set_default_backend`` for all,
else ``Backend.best()``). Operations enqueue and return at once; reading a
tensor (``numpy()``, printing) waits only for the work that writes it.
"""
from . import _xylem
from ._xylem import *  # noqa: F401,F403 - the whole API lives in the extension
from ._xylem import blas, data, fft, layers, losses, models, nn, optim  # noqa: F401
from ._numpy_compat import *  # noqa: F401,F403 - NumPy's names, *_like, eye, linspace, richer indexing
from . import _numpy_compat

__version__ = "0.1.0"
__all__ = [name for name in dir(_xylem) if not name.startswith("_")] + _numpy_compat.__all__
