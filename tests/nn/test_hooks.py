"""Forward hooks, ``Module.register_forward_hook``, and their handles (tensorlib.nn.hooks):
what a hook sees and may replace, removal (also on leaving a with block), ids that are never
reused, and the order hooks run in."""

import numpy as np
import pytest

import tensorlib as tl

from helpers import Affine, Leaf


def test_forward_hooks_see_inputs_and_output_and_can_replace_it():
    layer = Affine(3)
    seen = []
    first = layer.register_forward_hook(lambda m, inputs, out: seen.append((m, inputs, out)))
    second = layer.register_forward_hook(lambda m, inputs, out: out * 2.0)
    x = tl.tensor([1.0, 2.0, 3.0])
    y = layer(x)
    assert seen[0][0] is layer and seen[0][1] == (x,)
    np.testing.assert_array_equal(seen[0][2].data, [1.0, 2.0, 3.0])  # before the second hook
    np.testing.assert_array_equal(y.data, [2.0, 4.0, 6.0])
    second.remove()
    second.remove()  # a second remove does nothing
    np.testing.assert_array_equal(layer(x).data, [1.0, 2.0, 3.0])
    with first:
        pass
    layer(x)
    assert len(seen) == 2  # removed on leaving the with block
    with pytest.raises(TypeError, match="must be callable"):
        layer.register_forward_hook("not a function")


def test_a_removed_handle_never_removes_a_newer_hook():
    layer = Leaf()
    calls = []
    first = layer.register_forward_hook(lambda m, inputs, out: calls.append("first"))
    first.remove()
    layer.register_forward_hook(lambda m, inputs, out: calls.append("second"))
    first.remove()  # a second remove does nothing, whichever hooks came since
    layer(tl.tensor(np.ones(2)))
    assert calls == ["second"]


def test_hook_ids_are_never_reused_and_hooks_run_in_registration_order():
    layer, other = Leaf(), Leaf()
    calls = []
    handles = [layer.register_forward_hook(lambda m, i, o, k=k: calls.append(k))
               for k in range(3)]
    handles[2].remove()
    handles.append(layer.register_forward_hook(lambda m, i, o: calls.append(3)))
    handles.append(other.register_forward_hook(lambda m, i, o: None))
    assert len({h.id for h in handles}) == len(handles)
    assert handles[3].id > handles[2].id
    layer(tl.tensor(np.ones(2)))
    assert calls == [0, 1, 3]
