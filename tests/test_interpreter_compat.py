"""verifier.launch.interpreter.scalar_index: Triton 3.9's reading of a scalar as an int, put over older interpreters
(Triton 3.6 on the H200 with NumPy 2.x: Liger's cross entropy raised InterpreterError on every launch, a crash
finding on a correct kernel), and only over the code it was written for. A stand-in module with the old line stands
for the interpreter, so this runs with any Triton (or none)."""
import importlib.util
import operator
import textwrap

import numpy as np
import pytest

from verifier.launch.interpreter import scalar_index

INTERPRETER = textwrap.dedent('''
    class Scope:  # as Triton's _LangPatchScope: remembers what it replaced, to restore it after the grid run
        def __init__(self):
            self.saved = []

        def set_attr(self, obj, name, value):
            self.saved.append((obj, name, obj.__dict__.get(name)))
            setattr(obj, name, value)


    def _patch_lang_tensor(tensor, scope):
        scope.set_attr(tensor, "__bool__", lambda self: bool(self.handle.data))
        {index_line}


    def _patch_lang(tensor, scope):
        _patch_lang_tensor(tensor, scope)
''')
OLD = 'scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))'
NEW = 'scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))'


def _interpreter(tmp_path, index_line):
    path = tmp_path / "stand_in_interpreter.py"
    path.write_text(INTERPRETER.format(index_line=index_line))
    spec = importlib.util.spec_from_file_location(f"stand_in_{abs(hash(index_line))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _scalar(data):
    class Handle:
        pass

    class Tensor:
        pass

    t = Tensor()
    t.handle = Handle()
    t.handle.data = np.asarray(data)
    return t


def _numpy_refuses_one_element_arrays() -> bool:
    try:
        int(np.array([3]))
    except TypeError:
        return True
    return False


def test_a_scalar_argument_indexes_as_compiled_triton_reads_it(tmp_path):
    interp = _interpreter(tmp_path, OLD)
    t = _scalar(np.array([7], dtype=np.int32))  # how the interpreter holds an int argument: one element, 1-D
    interp._patch_lang(type(t), interp.Scope())
    if _numpy_refuses_one_element_arrays():  # the failure seen on the H200 (NumPy 2.x)
        with pytest.raises(TypeError, match="0-dimensional"):
            operator.index(t)
    assert scalar_index(interp) is True
    scope = interp.Scope()
    interp._patch_lang(type(t), scope)
    assert operator.index(t) == 7 and list(range(0, t, 3)) == [0, 3, 6]
    assert [name for _, name, _ in scope.saved].count("__index__") == 2  # through the scope: restored with the rest
    with pytest.raises(TypeError):  # a tensor of several elements is still no index
        operator.index(_scalar(np.array([1, 2])))
    assert scalar_index(interp) is False  # once


def test_nothing_is_installed_over_other_code(tmp_path):
    interp = _interpreter(tmp_path, NEW)  # Triton 3.9's own line
    before = interp._patch_lang_tensor
    assert scalar_index(interp) is False and interp._patch_lang_tensor is before
    bare = _interpreter(tmp_path, "pass")
    del bare._patch_lang_tensor
    assert scalar_index(bare) is False
