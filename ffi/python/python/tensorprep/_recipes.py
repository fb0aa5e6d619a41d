"""Augmentations remember the call that made them, so that they pickle.

Each augmentation constructor of ``_native`` (``AUGMENTATIONS`` and
``Lambda``) is replaced, once, by a wrapper with its name and signature that
keeps ``functools.partial(wrapper, *args, **kwargs)`` on the ``Augment`` it
returns (``Augment.__reduce__`` pickles that call; a ``Lambda``'s function
pickles by pickle's own rule).
"""

import functools
from typing import Any, Callable

from . import _native


def _remembering(make: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(make)
    def made(*args: Any, **kwargs: Any) -> Any:
        augment = make(*args, **kwargs)
        # A list given is copied: changing it later does not change the recipe.
        kept = [list(a) if isinstance(a, list) else a for a in args]
        augment._recipe = functools.partial(made, *kept, **kwargs)
        return augment

    # Found again by pickle under the module's name.
    made.__module__ = _native.__name__
    return made


for _name in (*_native.AUGMENTATIONS, "Lambda"):
    setattr(_native, _name, _remembering(getattr(_native, _name)))
